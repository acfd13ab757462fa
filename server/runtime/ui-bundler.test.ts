import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../logger.js";
import { buildUiBundles, UiBundleError } from "./ui-bundler.js";

let dir: string;
const log = createLogger("error");

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "agentplane-ui-"));
  await writeFile(
    join(dir, "cards.jsx"),
    `import { createContext } from "react";
import { Card } from "@acme/design";
import logo from "./logo.svg";
export const Theme = createContext("light");
export default { card: () => <Card><img src={logo} /></Card>, list: () => <ul /> };`,
  );
  await writeFile(join(dir, "logo.svg"), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  await writeFile(
    join(dir, "browser-only.jsx"),
    "const w = window.innerWidth;\nexport default { wide: () => w };",
  );
  await writeFile(join(dir, "broken.jsx"), "export default { a: () => <div> };");
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("buildUiBundles", () => {
  it("bundles a module, takes shared modules from the page, inlines assets and lists the components", async () => {
    const bundles = await buildUiBundles(
      { bundles: [{ name: "cards", file: join(dir, "cards.jsx") }], shared: ["@acme/design"] },
      log,
    );
    const bundle = bundles.get("cards")!;
    expect(bundle.globalName).toBe("__LGUI_cards");
    expect([...bundle.components!]).toEqual(["card", "list"]);
    expect([...bundle.files.keys()]).toEqual(["entrypoint.js"]);
    const js = bundle.files.get("entrypoint.js")!.body.toString();
    expect(js).toContain('Symbol.for("LGUI_REQUIRE")]("@acme/design")');
    expect(js).toContain('Symbol.for("LGUI_REQUIRE")]("react")');
    expect(js).toContain("data:image/svg+xml");
    expect(bundles.names()).toEqual(["cards"]);
  });

  it("accepts any component name when the module needs a browser to load", async () => {
    const bundles = await buildUiBundles(
      { bundles: [{ name: "wide", file: join(dir, "browser-only.jsx") }], shared: [] },
      log,
    );
    expect(bundles.get("wide")!.components).toBeUndefined();
    expect(bundles.get("wide")!.unlisted).toContain("window is not defined");
  });

  it("stops with esbuild's message, the ui entry and its file when a module does not bundle", async () => {
    const build = buildUiBundles(
      { bundles: [{ name: "broken", file: join(dir, "broken.jsx") }], shared: [] },
      log,
    );
    await expect(build).rejects.toBeInstanceOf(UiBundleError);
    await expect(build).rejects.toThrow(
      `generative UI "ui.broken" (${join(dir, "broken.jsx")}) does not bundle`,
    );
    await expect(build).rejects.toThrow(/Unexpected end of file before a closing "div" tag/);

    const missing = buildUiBundles(
      { bundles: [{ name: "gone", file: join(dir, "gone.tsx") }], shared: [] },
      log,
    );
    await expect(missing).rejects.toThrow(/Could not resolve/);
  });
});
