import { describe, expect, it } from "vitest";
import { dataFileKey, destinationRoot, manifestKey, partitionFolder, probeKey } from "./export-layout.js";

const ids = { exportId: "e", tenantId: "t", sessionId: "s", day: new Date("2026-03-05T13:00:00Z") };

describe("export layout", () => {
  it("builds the seed's Hive folders, month and day without leading zeros", () => {
    const location = { bucketName: "b", prefix: "/data/traces/", includeBucketInPrefix: false };
    expect(partitionFolder(location, ids)).toBe(
      "data/traces/export_id=e/tenant_id=t/session_id=s/runs/year=2026/month=3/day=5",
    );
  });

  it("puts the bucket in front only when asked, and no empty segments", () => {
    expect(destinationRoot({ bucketName: "b", prefix: "", includeBucketInPrefix: false })).toBe("");
    expect(destinationRoot({ bucketName: "b", prefix: "", includeBucketInPrefix: true })).toBe("b");
    expect(destinationRoot({ bucketName: "b", prefix: "p", includeBucketInPrefix: true })).toBe("b/p");
    expect(partitionFolder({ bucketName: "b", prefix: "", includeBucketInPrefix: false }, ids)).toMatch(
      /^export_id=e\//,
    );
    expect(probeKey({ bucketName: "b", prefix: "", includeBucketInPrefix: false }, "x")).toBe(
      "tmp/agentplane-destination-check-x.txt",
    );
  });

  it("names files deterministically in write order, and the manifest apart", () => {
    expect(dataFileKey("f", "r", 0)).toBe("f/runs-r-00000.parquet");
    expect(dataFileKey("f", "r", 12)).toBe("f/runs-r-00012.parquet");
    expect(manifestKey("f", "r")).toBe("f/_manifest-r.json");
  });
});
