import { expect, it } from "vitest";
import { systemAssistantId, uuidv5 } from "./system-assistant-id.js";

it("derives the same system assistant id as the LangGraph servers", () => {
  expect(systemAssistantId("agent")).toBe("fe096781-5601-53d2-b2f6-0d3403f7e9ca");
});

it("computes RFC 9562 UUIDv5 (the DNS-namespace example of python's uuid module)", () => {
  expect(uuidv5("python.org", "6ba7b810-9dad-11d1-80b4-00c04fd430c8")).toBe(
    "886313e1-3b8a-5372-9b90-0c9aee199e5d",
  );
});
