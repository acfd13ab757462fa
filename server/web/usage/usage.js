// Settings › Billing and Usage › Granular Usage. Plain browser script (no build step): reads the
// granular usage API with the API key the user enters, draws traces per bucket per dimension value
// as grouped bars with uPlot (zero-filled between records, whole-number ticks) and a table, and
// downloads the CSV export. Projects are told apart by workspace. The chart's data is exposed as
// `window.__usageChart` and the plot as `window.__usagePlot` for tests.
(() => {
  const KEY_STORAGE = "agentplane.apiKey";
  const USAGE_PATH = "/api/v1/orgs/current/billing/granular-usage";
  const HOUR_MS = 3_600_000;
  const DAY_MS = 24 * HOUR_MS;
  // Chart height in CSS pixels; the width follows the container.
  const CHART_HEIGHT = 300;
  // Distinct series colours; they repeat beyond this many dimension values.
  const COLORS = ["#2457c5", "#d1495b", "#00798c", "#edae49", "#66a182", "#8d5a97", "#30638e", "#e07a5f"];
  const DIMENSION_HEADERS = { workspace: "Workspace", project: "Project", user: "User", api_key: "API key" };
  // Share of a bucket's width its bars take together; the rest is the gap between buckets.
  const GROUP_WIDTH = 0.8;
  // Tick steps of the time axis, in buckets.
  const X_STEPS = [1, 2, 3, 4, 6, 7, 12, 14, 24, 28, 48, 96, 168, 336, 730];
  // Tick steps of the traces axis: whole numbers only (1, 2, 5, 10, 20, 50, ... up to 5e9).
  const INTEGER_STEPS = Array.from({ length: 10 }, (_, e) => [1, 2, 5].map((m) => m * 10 ** e)).flat();

  const $ = (id) => document.getElementById(id);
  let apiKey = localStorage.getItem(KEY_STORAGE) ?? sessionStorage.getItem(KEY_STORAGE) ?? "";
  let plot = null;
  // Workspace names by id, from the list the key can read (projects are named with theirs).
  let workspaceNames = new Map();

  function setStatus(message, isError = false) {
    $("status").textContent = message;
    $("status").classList.toggle("error", isError);
  }

  async function api(path) {
    if (!apiKey) throw new Error("enter an API key first");
    const response = await fetch(path, { headers: { "x-api-key": apiKey } });
    if (!response.ok) {
      let detail = response.statusText;
      try {
        detail = (await response.json()).detail ?? detail;
      } catch {
        // Not a JSON error body: keep the status text.
      }
      throw new Error(`${response.status}: ${detail}`);
    }
    return response;
  }

  // Shows which key is in use (redacted, whose, where it is kept) and hides the form, or the reverse.
  function showKey(me) {
    $("key-form").hidden = Boolean(me);
    $("key-status").hidden = !me;
    if (!me) return;
    const owner = me.user?.email ? `personal key of ${me.user.email}` : `${me.api_key_kind || "service"} key`;
    const kept = localStorage.getItem(KEY_STORAGE)
      ? "remembered on this device"
      : "kept until this tab closes";
    $("key-in-use").textContent = `${me.api_key_short_key || "(no key: auth is off)"} · ${owner} · ${kept}`;
  }

  async function useKey() {
    try {
      showKey(await (await api("/api/v1/whoami")).json());
    } catch (error) {
      forgetKey();
      throw error;
    }
    await loadWorkspaces();
    await refresh();
  }

  // Drops the key from memory and storage and clears everything it showed.
  function forgetKey() {
    apiKey = "";
    localStorage.removeItem(KEY_STORAGE);
    sessionStorage.removeItem(KEY_STORAGE);
    plot?.destroy();
    plot = null;
    window.__usageChart = undefined;
    window.__usagePlot = undefined;
    $("chart").textContent = "";
    $("usage-table").tBodies[0].textContent = "";
    clearWorkspaces();
    $("workspaces-empty").hidden = false;
    $("workspaces-empty").textContent = "Enter an API key to list workspaces.";
    showKey(null);
  }

  function clearWorkspaces() {
    for (const old of $("workspaces").querySelectorAll("label")) old.remove();
    workspaceNames = new Map();
  }

  async function loadWorkspaces() {
    const workspaces = await (await api("/api/v1/workspaces")).json();
    const box = $("workspaces");
    clearWorkspaces();
    workspaceNames = new Map(workspaces.map((ws) => [ws.id, ws.display_name]));
    $("workspaces-empty").hidden = workspaces.length > 0;
    $("workspaces-empty").textContent = "No workspaces are readable with this key.";
    for (const ws of workspaces) {
      const label = document.createElement("label");
      label.className = "inline";
      const input = document.createElement("input");
      input.type = "checkbox";
      input.name = "workspace";
      input.value = ws.id;
      input.checked = true;
      label.append(input, ` ${ws.display_name}`);
      box.append(label);
    }
  }

  function utcInput(value, name) {
    const at = new Date(`${value}:00Z`);
    if (!value || Number.isNaN(at.getTime())) throw new Error(`enter a ${name} date and time`);
    return at;
  }

  function selectedRange() {
    const choice = $("range").value;
    if (choice === "custom") {
      return { start: utcInput($("start").value, "start"), end: utcInput($("end").value, "end") };
    }
    const end = new Date(Math.ceil(Date.now() / HOUR_MS) * HOUR_MS);
    const start = new Date(end);
    if (choice === "7d") start.setTime(end.getTime() - 7 * DAY_MS);
    if (choice === "30d") start.setTime(end.getTime() - 30 * DAY_MS);
    if (choice === "3m") start.setUTCMonth(start.getUTCMonth() - 3);
    if (choice === "6m") start.setUTCMonth(start.getUTCMonth() - 6);
    if (choice === "1y") start.setUTCFullYear(start.getUTCFullYear() - 1);
    return { start, end };
  }

  function currentQuery() {
    const { start, end } = selectedRange();
    if (end <= start) throw new Error("the end must be after the start");
    const params = new URLSearchParams({ start_time: start.toISOString(), end_time: end.toISOString() });
    const ids = [...document.querySelectorAll("input[name=workspace]:checked")].map((input) => input.value);
    if (ids.length === 0) throw new Error("select at least one workspace");
    for (const id of ids) params.append("workspace_ids", id);
    params.set("group_by", $("group-by").value);
    if ($("aggregation").value) params.set("aggregation", $("aggregation").value);
    return { params, ids, start, end };
  }

  // The usage records of the query, each with the workspace it belongs to when grouped by project:
  // project records do not name their workspace, so each workspace is asked for separately.
  async function fetchUsage(params, ids) {
    if (params.get("group_by") !== "project") return (await api(`${USAGE_PATH}?${params}`)).json();
    const answers = await Promise.all(
      ids.map(async (id) => {
        const one = new URLSearchParams(params);
        one.delete("workspace_ids");
        one.append("workspace_ids", id);
        const result = await (await api(`${USAGE_PATH}?${one}`)).json();
        return { ...result, usage: result.usage.map((r) => ({ ...r, workspace_id: id })) };
      }),
    );
    const usage = answers.flatMap((a) => a.usage);
    usage.sort((a, b) => Date.parse(a.time_bucket) - Date.parse(b.time_bucket) || labelCompare(a, b));
    return { ...answers[0], usage };
  }

  function unitOf(stride) {
    if (stride.hours === 1) return "hour";
    return { 1: "day", 7: "week", 30: "month", 365: "year" }[stride.days];
  }

  // Same alignment as the server: UTC hour, day, ISO week (Monday), calendar month, calendar year.
  function bucketStart(unit, at) {
    const t = at.getTime();
    if (unit === "hour") return new Date(Math.floor(t / HOUR_MS) * HOUR_MS);
    const day = Math.floor(t / DAY_MS) * DAY_MS;
    if (unit === "day") return new Date(day);
    if (unit === "week") return new Date(day - ((new Date(day).getUTCDay() + 6) % 7) * DAY_MS);
    if (unit === "month") return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
    return new Date(Date.UTC(at.getUTCFullYear(), 0, 1));
  }

  function bucketEnd(unit, start) {
    const t = start.getTime();
    if (unit === "hour") return new Date(t + HOUR_MS);
    if (unit === "day") return new Date(t + DAY_MS);
    if (unit === "week") return new Date(t + 7 * DAY_MS);
    if (unit === "month") return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
    return new Date(Date.UTC(start.getUTCFullYear() + 1, 0, 1));
  }

  // What tells two records' groups apart: ids, never names (two workspaces may both hold "alpha").
  function keyOf(groupBy, record) {
    const d = record.dimensions;
    if (groupBy === "workspace") return d.workspace_id;
    if (groupBy === "project") return `${record.workspace_id}/${d.project_id ?? "deleted"}`;
    if (groupBy === "user") return d.user_id ?? "";
    return d.api_key_short_key ?? "";
  }

  function labelOf(groupBy, record) {
    const d = record.dimensions;
    if (groupBy === "workspace") return d.workspace_name ?? d.workspace_id;
    if (groupBy === "project") {
      const workspace = workspaceNames.get(record.workspace_id) ?? record.workspace_id;
      return `${d.project_name ?? d.project_id ?? "(deleted project)"} (${workspace})`;
    }
    if (groupBy === "user") return d.user_email ?? d.user_id ?? "(no user: service key)";
    return d.api_key_short_key ?? "(unknown key)";
  }

  function labelCompare(a, b) {
    const groupBy = $("group-by").value;
    return labelOf(groupBy, a).localeCompare(labelOf(groupBy, b));
  }

  // Every bucket of the range, with zeros where the API returned no record; one series per group.
  function chartData(usage, unit, start, end, groupBy) {
    const buckets = [];
    for (let t = bucketStart(unit, start); t < end; t = bucketEnd(unit, t)) buckets.push(t.toISOString());
    const groups = new Map();
    for (const record of usage) groups.set(keyOf(groupBy, record), labelOf(groupBy, record));
    const keys = [...groups.keys()].sort(
      (a, b) => groups.get(a).localeCompare(groups.get(b)) || a.localeCompare(b),
    );
    const index = new Map(buckets.map((b, i) => [b, i]));
    const series = keys.map(() => buckets.map(() => 0));
    for (const record of usage) {
      const i = index.get(new Date(record.time_bucket).toISOString());
      if (i !== undefined) series[keys.indexOf(keyOf(groupBy, record))][i] += record.traces;
    }
    const xs = buckets.map((b) => Date.parse(b) / 1000);
    // The narrowest bucket (months differ), in seconds: the bars of every bucket share it.
    const first = bucketStart(unit, start);
    const bucketSeconds = (bucketEnd(unit, first).getTime() - first.getTime()) / 1000;
    const width = (bucketSeconds * GROUP_WIDTH) / Math.max(keys.length, 1);
    return {
      buckets,
      keys,
      labels: keys.map((k) => groups.get(k)),
      data: [xs, ...series],
      bucketSeconds,
      barSeconds: width,
    };
  }

  function draw(chart) {
    plot?.destroy();
    plot = null;
    const container = $("chart");
    container.textContent = "";
    if (chart.labels.length === 0) {
      container.textContent = "No traces in this range.";
      return;
    }
    const half = chart.bucketSeconds / 2;
    const groupStart = (chart.bucketSeconds * GROUP_WIDTH) / 2;
    // Each series' bars sit side by side, centred on their bucket's start, in legend order.
    const bars = (i) =>
      uPlot.paths.bars({
        disp: {
          x0: { unit: 1, values: (u) => u.data[0].map((x) => x - groupStart + i * chart.barSeconds) },
          size: { unit: 1, values: () => [chart.barSeconds] },
        },
      });
    plot = new uPlot(
      {
        width: Math.max(container.clientWidth - 16, 320),
        height: CHART_HEIGHT,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
        scales: {
          // Half a bucket of room on each side for the first and last buckets' bars.
          x: { time: true, range: (_u, min, max) => [min - half, max + half] },
          y: { range: (_u, _min, max) => [0, Math.max(Math.ceil(max), 1)] },
        },
        axes: [
          // Ticks on bucket starts only (every bucket, or every few when they are many).
          { incrs: X_STEPS.map((n) => n * chart.bucketSeconds) },
          {
            incrs: INTEGER_STEPS,
            values: (_u, splits) => {
              window.__usageChart.yTicks = splits;
              return splits.map((v) => String(v));
            },
          },
        ],
        series: [
          { label: "Bucket (UTC)" },
          ...chart.labels.map((label, i) => ({
            label,
            stroke: COLORS[i % COLORS.length],
            fill: COLORS[i % COLORS.length],
            width: 0,
            paths: bars(i),
            points: { show: false },
          })),
        ],
      },
      chart.data,
      container,
    );
    window.__usagePlot = plot;
  }

  function fillTable(usage, groupBy) {
    $("dimension-header").textContent = DIMENSION_HEADERS[groupBy];
    const body = $("usage-table").tBodies[0];
    body.textContent = "";
    for (const record of usage) {
      const row = body.insertRow();
      row.insertCell().textContent = record.time_bucket;
      row.insertCell().textContent = labelOf(groupBy, record);
      const traces = row.insertCell();
      traces.className = "num";
      traces.textContent = String(record.traces);
    }
  }

  async function refresh() {
    const { params, ids, start, end } = currentQuery();
    setStatus("Loading…");
    const result = await fetchUsage(params, ids);
    const groupBy = params.get("group_by");
    const unit = unitOf(result.stride);
    const chart = chartData(result.usage, unit, start, end, groupBy);
    window.__usageChart = {
      ...chart,
      stride: result.stride,
      unit,
      groupBy,
      query: params.toString(),
      yTicks: [],
    };
    draw(chart);
    fillTable(result.usage, groupBy);
    const total = result.usage.reduce((sum, r) => sum + r.traces, 0);
    setStatus(`${total} traces in ${chart.buckets.length} ${unit} buckets.`);
  }

  async function exportCsv() {
    const { params } = currentQuery();
    const response = await api(`${USAGE_PATH}/export?${params}`);
    const disposition = response.headers.get("content-disposition") ?? "";
    const filename = /filename="([^"]+)"/.exec(disposition)?.[1] ?? "granular-usage.csv";
    const url = URL.createObjectURL(await response.blob());
    const link = document.createElement("a");
    link.href = url;
    link.download = filename;
    document.body.append(link);
    link.click();
    link.remove();
    // Free the blob once the browser has surely started the download.
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    setStatus(`Exported ${filename}.`);
  }

  const report = (error) => setStatus(error instanceof Error ? error.message : String(error), true);

  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    apiKey = $("api-key").value.trim();
    localStorage.removeItem(KEY_STORAGE);
    sessionStorage.removeItem(KEY_STORAGE);
    ($("remember-key").checked ? localStorage : sessionStorage).setItem(KEY_STORAGE, apiKey);
    $("api-key").value = "";
    useKey().catch(report);
  });
  $("forget-key").addEventListener("click", () => {
    forgetKey();
    setStatus("The key is forgotten on this device. Enter an API key to see usage.");
  });
  const showCustomRange = () => {
    for (const field of document.querySelectorAll(".custom")) field.hidden = $("range").value !== "custom";
  };
  $("range").addEventListener("change", showCustomRange);
  // A reload may restore "Custom" in the select; the fields follow whatever it shows.
  showCustomRange();
  $("controls").addEventListener("submit", (event) => {
    event.preventDefault();
    refresh().catch(report);
  });
  $("export").addEventListener("click", () => exportCsv().catch(report));

  if (apiKey) useKey().catch(report);
  else setStatus("Enter an API key to see usage.");
})();
