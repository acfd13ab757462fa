// Settings › Billing and Usage › Granular Usage. Plain browser script (no build step): reads the
// granular usage API with the API key the user enters, draws traces per bucket per dimension value
// with uPlot (zero-filled between records) and a table, and downloads the CSV export. The chart's
// data is exposed as `window.__usageChart` for tests.
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

  const $ = (id) => document.getElementById(id);
  let apiKey = localStorage.getItem(KEY_STORAGE) ?? sessionStorage.getItem(KEY_STORAGE) ?? "";
  let plot = null;

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

  async function loadWorkspaces() {
    const workspaces = await (await api("/api/v1/workspaces")).json();
    const box = $("workspaces");
    for (const old of box.querySelectorAll("label")) old.remove();
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
    return { params, start, end };
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

  function labelOf(groupBy, d) {
    if (groupBy === "workspace") return d.workspace_name ?? d.workspace_id;
    if (groupBy === "project") return d.project_name ?? d.project_id ?? "(deleted project)";
    if (groupBy === "user") return d.user_email ?? d.user_id ?? "(no user: service key)";
    return d.api_key_short_key ?? "(unknown key)";
  }

  // Every bucket of the range, with zeros where the API returned no record.
  function chartData(usage, unit, start, end, groupBy) {
    const buckets = [];
    for (let t = bucketStart(unit, start); t < end; t = bucketEnd(unit, t)) buckets.push(t.toISOString());
    const labels = [...new Set(usage.map((r) => labelOf(groupBy, r.dimensions)))].sort();
    const index = new Map(buckets.map((b, i) => [b, i]));
    const series = labels.map(() => buckets.map(() => 0));
    for (const record of usage) {
      const i = index.get(new Date(record.time_bucket).toISOString());
      if (i !== undefined) series[labels.indexOf(labelOf(groupBy, record.dimensions))][i] += record.traces;
    }
    const xs = buckets.map((b) => Date.parse(b) / 1000);
    return { buckets, labels, data: [xs, ...series] };
  }

  function draw(chart) {
    plot?.destroy();
    const container = $("chart");
    container.textContent = "";
    if (chart.labels.length === 0) {
      container.textContent = "No traces in this range.";
      return;
    }
    plot = new uPlot(
      {
        width: Math.max(container.clientWidth - 16, 320),
        height: CHART_HEIGHT,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
        scales: { y: { range: (_u, _min, max) => [0, Math.max(max, 1)] } },
        series: [
          { label: "Bucket (UTC)" },
          ...chart.labels.map((label, i) => ({
            label,
            stroke: COLORS[i % COLORS.length],
            width: 2,
            points: { show: true },
          })),
        ],
      },
      chart.data,
      container,
    );
  }

  function fillTable(usage, groupBy) {
    $("dimension-header").textContent = DIMENSION_HEADERS[groupBy];
    const body = $("usage-table").tBodies[0];
    body.textContent = "";
    for (const record of usage) {
      const row = body.insertRow();
      row.insertCell().textContent = record.time_bucket;
      row.insertCell().textContent = labelOf(groupBy, record.dimensions);
      const traces = row.insertCell();
      traces.className = "num";
      traces.textContent = String(record.traces);
    }
  }

  async function refresh() {
    const { params, start, end } = currentQuery();
    setStatus("Loading…");
    const result = await (await api(`${USAGE_PATH}?${params}`)).json();
    const groupBy = params.get("group_by");
    const unit = unitOf(result.stride);
    const chart = chartData(result.usage, unit, start, end, groupBy);
    window.__usageChart = { ...chart, stride: result.stride, unit, groupBy, query: params.toString() };
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
    loadWorkspaces().then(refresh).catch(report);
  });
  $("range").addEventListener("change", () => {
    for (const field of document.querySelectorAll(".custom")) field.hidden = $("range").value !== "custom";
  });
  $("controls").addEventListener("submit", (event) => {
    event.preventDefault();
    refresh().catch(report);
  });
  $("export").addEventListener("click", () => exportCsv().catch(report));

  if (apiKey) loadWorkspaces().then(refresh).catch(report);
  else setStatus("Enter an API key to see usage.");
})();
