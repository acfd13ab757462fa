import { describe, expect, it } from "vitest";
import { defineJob, type JobDefinitionInput } from "./job-definition.js";

const base: JobDefinitionInput<{ n: number }> = {
  name: "example.job",
  version: 1,
  retryLimit: 3,
  retryDelaySeconds: 5,
  retryBackoff: true,
  expireInSeconds: 60,
  async handler() {},
};

describe("defineJob", () => {
  it("fills in the defaults and freezes the definition", () => {
    const job = defineJob(base);
    expect(job).toMatchObject({ name: "example.job", policy: "standard", batchSize: 1, workers: 1 });
    expect(job.retentionSeconds).toBeUndefined();
    expect(Object.isFrozen(job)).toBe(true);
  });

  it("keeps the options it is given", () => {
    const job = defineJob({ ...base, policy: "stately", batchSize: 20, workers: 3, retentionSeconds: 3600 });
    expect(job).toMatchObject({ policy: "stately", batchSize: 20, workers: 3, retentionSeconds: 3600 });
  });

  it.each([
    ["a name with a space", { name: "bad name" }, "job name"],
    ["a name pg-boss reserves", { name: "__pgboss__send-it" }, "job name"],
    ["version 0", { version: 0 }, "version must be an integer from 1"],
    ["a fractional version", { version: 1.5 }, "version must be an integer"],
    ["a negative retryLimit", { retryLimit: -1 }, "retryLimit"],
    ["a fractional retry delay", { retryDelaySeconds: 0.5 }, "retryDelaySeconds"],
    [
      "an expiry of 24 hours",
      { expireInSeconds: 24 * 60 * 60 },
      "expireInSeconds must be an integer from 1 to 86399",
    ],
    ["an expiry of 0", { expireInSeconds: 0 }, "expireInSeconds"],
    ["a retention of 0", { retentionSeconds: 0 }, "retentionSeconds"],
    ["batchSize 0", { batchSize: 0 }, "batchSize"],
    ["workers 0", { workers: 0 }, "workers"],
  ])("refuses %s", (_, override, message) => {
    expect(() => defineJob({ ...base, ...override })).toThrow(message);
  });
});
