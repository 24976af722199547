/* keyramp web UI: draws charts with the vendored uPlot from JSON embedded in the page.
   No inline script anywhere (the CSP forbids it): data arrives in
   <script type="application/json"> blocks, which browsers never execute. */
(function () {
  "use strict";

  var PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d", "#4d7c0f"];
  var CLASS_COLOURS = ["#dc2626", "#ea580c", "#ca8a04", "#9333ea", "#be185d", "#0891b2", "#4b5563"];
  var charts = [];

  function readJSON(id) {
    var el = document.getElementById(id);
    if (!el) return null;
    try { return JSON.parse(el.textContent); } catch (e) { console.warn("keyramp: bad JSON in #" + id); return null; }
  }

  function chartWidth(el) {
    return Math.max(260, Math.floor(el.getBoundingClientRect().width) || 360);
  }

  function fmtSeconds(s) {
    if (s >= 3600) return (s / 3600).toFixed(s % 3600 ? 1 : 0) + " h";
    if (s >= 60) return (s / 60).toFixed(s % 60 ? 1 : 0) + " min";
    return s + " s";
  }

  function draw(el, yLabel, series, data, bands) {
    el.textContent = "";
    var opts = {
      width: chartWidth(el),
      height: 210,
      cursor: { drag: { x: true, y: false } },
      // y from 0: a rate or latency axis that starts mid-range exaggerates noise
      scales: { x: { time: false }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.08 : 1]; } } },
      legend: { live: true },
      axes: [
        { values: function (u, vals) { return vals.map(fmtSeconds); }, size: 36 },
        { label: yLabel, size: 56, labelSize: 18 }
      ],
      series: [{ label: "t", value: function (u, v) { return v == null ? "–" : fmtSeconds(v); } }].concat(series)
    };
    if (bands) opts.bands = bands;
    var chart = new uPlot(opts, data, el);
    charts.push({ el: el, chart: chart });
    return chart;
  }

  function line(label, colour, extra) {
    var s = { label: label, stroke: colour, width: 1.6, spanGaps: false,
              value: function (u, v) { return v == null ? "–" : (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2)); } };
    for (var k in (extra || {})) s[k] = extra[k];
    return s;
  }

  function destroyIn(container) {
    charts = charts.filter(function (c) {
      if (container.contains(c.el)) { c.chart.destroy(); return false; }
      return true;
    });
  }

  /* ---- run page: per cell, one operation at a time ---- */
  function drawRunCell(container, cellSeries) {
    var op = container.querySelector(".op-select").value;
    var s = cellSeries[op];
    if (!s) return;
    destroyIn(container);
    var x = s.t;
    var lat = container.querySelector('[data-kind="latency"]');
    draw(lat, "ms", [line("p50", PALETTE[0]), line("p99", PALETTE[1])], [x, s.p50_ms, s.p99_ms]);

    var thr = container.querySelector('[data-kind="throughput"]');
    var thrSeries = [line("achieved", PALETTE[2], { fill: "rgba(22,163,74,0.08)" })];
    var thrData = [x, s.ops_per_s];
    var bands = null;
    if (s.ops_max_per_s && s.ops_max_per_s.length) {
      // the bucket's fastest and slowest second as a band: a stall is not averaged away
      thrSeries.push(line("fastest s", "rgba(22,163,74,0.35)", { width: 0.6 }));
      thrSeries.push(line("slowest s", "rgba(22,163,74,0.35)", { width: 0.6 }));
      thrData.push(s.ops_max_per_s, s.ops_min_per_s);
      bands = [{ series: [2, 3], fill: "rgba(22,163,74,0.14)" }];
    }
    if (s.target_ops_per_s && s.target_ops_per_s.length) {
      thrSeries.push(line("target", "#6b7280", { dash: [6, 4] }));
      thrData.push(s.target_ops_per_s);
    }
    draw(thr, "ops/s", thrSeries, thrData, bands);

    var err = container.querySelector('[data-kind="errors"]');
    var errSeries = [line("all errors", "#111827", { width: 1 })];
    var errData = [x, s.errors_per_s];
    Object.keys(s.error_classes || {}).sort().forEach(function (cls, i) {
      errSeries.push(line(cls, CLASS_COLOURS[i % CLASS_COLOURS.length]));
      errData.push(s.error_classes[cls]);
    });
    draw(err, "errors/s", errSeries, errData);

    var note = container.querySelector(".bucket-note");
    if (note) {
      note.textContent = s.bucket_s > 1
        ? "Each point covers " + fmtSeconds(s.bucket_s) + ": throughput and p50 are averaged (band: slowest to fastest second), p99 is the worst second."
        : "One point per second.";
    }
  }

  function showProblem(container, message) {
    container.querySelectorAll(".chart").forEach(function (el) { el.textContent = ""; });
    var note = container.querySelector(".bucket-note");
    if (note) note.textContent = message;
    container.classList.add("charts-empty");
  }

  function fillOps(select, ops) {
    // "all operations" first, then the cell's operations by name
    var names = Object.keys(ops).filter(function (op) { return op !== "*"; }).sort();
    select.textContent = "";
    (ops["*"] ? ["*"] : []).concat(names).forEach(function (op) {
      var o = document.createElement("option");
      o.value = op;
      o.textContent = op === "*" ? "all operations" : op;
      select.appendChild(o);
    });
  }

  /* each cell's series arrive from /runs/<id>/series/<cell>.json after the page is shown; a
     running run's page fetches them again as they grow (an unchanged cell costs a 304) */
  function loadSeries(container, live) {
    return fetch(container.getAttribute("data-series-src"), { headers: { Accept: "application/json" }, cache: "no-cache" })
      .then(function (r) {
        if (!r.ok) return Promise.reject(new Error("HTTP " + r.status));
        var tag = r.headers.get("ETag");
        if (tag && tag === container.getAttribute("data-etag")) return null;  // nothing new
        if (tag) container.setAttribute("data-etag", tag);
        return r.json();
      })
      .then(function (doc) {
        if (!doc) return;
        var ops = doc.ops || {};
        if (!Object.keys(ops).length) {
          if (live) { showWaiting(container); return; }
          showProblem(container, "No time series for this cell.");
          return;
        }
        container.classList.remove("charts-empty");
        var select = container.querySelector(".op-select");
        var chosen = select.value;
        fillOps(select, ops);
        if (ops[chosen]) select.value = chosen;
        select.onchange = function () { drawRunCell(container, ops); };
        drawRunCell(container, ops);
        var all = ops["*"] || {};
        container.setAttribute("data-points", String((all.t || []).length));
        container.setAttribute("data-loaded", "true");
      })
      .catch(function (e) { showProblem(container, "Time series unavailable (" + e.message + ")."); });
  }

  function showWaiting(container) {
    container.querySelectorAll(".chart").forEach(function (el) { el.textContent = ""; });
    var note = container.querySelector(".bucket-note");
    if (note) note.textContent = "Waiting for this cell to start.";
  }

  function initRunPage() {
    var live = document.getElementById("live");
    document.querySelectorAll(".charts[data-series-src]").forEach(function (container) {
      loadSeries(container, !!live);
    });
    if (live) followLiveRun(live);
    followPlanning();
  }

  /* ---- a run planned in the background: poll plans.json, swap in the answer and each plan as it arrives ---- */
  var PLAN_POLL_MS = 2000;

  function followPlanning() {
    var answer = document.querySelector("#answer[data-plans-src]");
    if (!answer || answer.getAttribute("data-following") === "true") return;
    answer.setAttribute("data-following", "true");
    var src = answer.getAttribute("data-plans-src");
    var seen = null;
    function tick() {
      fetch(src, { cache: "no-store" })
        .then(function (r) { return r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status)); })
        .then(function (doc) {
          var planning = doc.status === "planning";
          var planned = doc.planned || [];
          if (doc.done !== seen || !planning) {  // new plans (or the end): the answer rows and the plans that came
            seen = doc.done;
            var current = document.getElementById("answer");
            if (current) swapPart(current);
            document.querySelectorAll(".plan.planning[data-plan-src]").forEach(function (el) {
              if (!planning || planned.indexOf(el.getAttribute("data-cell")) >= 0) swapPart(el);
              else el.querySelector(".plan-progress").textContent = doc.done + " of " + doc.total;
            });
          }
          if (planning) setTimeout(tick, PLAN_POLL_MS);
        })
        .catch(function (e) { console.warn("keyramp: plan status unavailable: " + e.message); setTimeout(tick, PLAN_POLL_MS * 2); });
    }
    setTimeout(tick, PLAN_POLL_MS);
  }

  /* ---- a run in progress: poll live.json, grow the running cell's charts, swap in partials ---- */
  var LIVE_POLL_MS = 2000;

  function swapPart(el, then) {
    fetch(el.getAttribute("data-part-src") || el.getAttribute("data-head-src") || el.getAttribute("data-plan-src"),
          { cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(new Error("HTTP " + r.status)); })
      .then(function (html) {
        var holder = document.createElement("div");
        holder.innerHTML = html;  // our own server-rendered partial (escaped by Jinja)
        var fresh = holder.firstElementChild;
        if (fresh) { el.replaceWith(fresh); if (then) then(fresh); } else el.remove();  // nothing there any more
      })
      .catch(function (e) { console.warn("keyramp: partial unavailable: " + e.message); });
  }

  function followLiveRun(banner) {
    var src = banner.getAttribute("data-live-src");
    var text = banner.querySelector(".live-text");
    function tick() {
      fetch(src, { cache: "no-store" })
        .then(function (r) { return r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status)); })
        .then(function (doc) {
          text.textContent = doc.text;
          banner.classList.toggle("stale", !!doc.stale);
          var current = doc.cell && doc.cell.id;
          var done = doc.done || [];
          document.querySelectorAll(".charts[data-series-src]").forEach(function (c) {
            var cell = c.getAttribute("data-cell");
            var finished = done.indexOf(cell) >= 0;
            if (cell === current || (finished && c.getAttribute("data-final") !== "true")) {
              loadSeries(c, true);
              if (finished) c.setAttribute("data-final", "true");
            }
          });
          document.querySelectorAll(".cell-summary[data-finished='false']").forEach(function (part) {
            if (done.indexOf(part.getAttribute("data-cell")) >= 0) swapPart(part, initHeatmaps);
          });
          if (doc.status !== "running") {  // the run is over: final data everywhere, stop polling
            var head = document.getElementById("run-head");
            if (head && head.getAttribute("data-head-src")) swapPart(head, followPlanning);  // planned from now on
            document.querySelectorAll(".cell-summary[data-part-src]").forEach(function (part) {
              swapPart(part, initHeatmaps);
            });
            document.querySelectorAll(".charts[data-series-src]").forEach(function (c) { loadSeries(c, false); });
            return;
          }
          setTimeout(tick, LIVE_POLL_MS);
        })
        .catch(function (e) { text.textContent = "live status unavailable (" + e.message + ")"; setTimeout(tick, LIVE_POLL_MS * 2); });
    }
    setTimeout(tick, LIVE_POLL_MS);
  }

  /* runs list: running runs' progress lines follow their live.json */
  function initRunsPage() {
    var lines = document.querySelectorAll(".live-line[data-live-src]");
    if (!lines.length) return;
    function tick() {
      var pending = 0;
      lines.forEach(function (line) {
        if (line.getAttribute("data-ended") === "true") return;
        pending++;
        fetch(line.getAttribute("data-live-src"), { cache: "no-store" })
          .then(function (r) { return r.ok ? r.json() : null; })
          .then(function (doc) {
            if (!doc) return;
            line.textContent = doc.text;
            line.classList.toggle("stale", !!doc.stale);
            if (doc.status !== "running") {
              line.setAttribute("data-ended", "true");
              var badge = line.parentElement.querySelector(".badge");
              if (badge) { badge.textContent = doc.status; badge.className = "badge status-" + doc.status; }
            }
          });
      });
      if (pending) setTimeout(tick, LIVE_POLL_MS);
    }
    setTimeout(tick, LIVE_POLL_MS);
  }

  /* ---- compare page: runs overlaid per cell identity ---- */
  function drawCompare(container, group, runIds) {
    var op = container.querySelector(".op-select").value;
    var g = group[op];
    if (!g) return;
    destroyIn(container);
    var p99 = [], ops = [], p99Data = [g.t], opsData = [g.t];
    g.runs.forEach(function (r) {
      var colour = PALETTE[runIds.indexOf(r.run_id) % PALETTE.length];
      var label = r.run_id.slice(-4);
      p99.push(line(label, colour)); p99Data.push(r.p99_ms);
      ops.push(line(label, colour)); opsData.push(r.ops_per_s);
    });
    draw(container.querySelector('[data-kind="cmp-p99"]'), "ms", p99, p99Data);
    draw(container.querySelector('[data-kind="cmp-ops"]'), "ops/s", ops, opsData);
  }

  function initComparePage() {
    var data = readJSON("kr-compare");
    if (!data) return;
    document.querySelectorAll(".compare-charts[data-group]").forEach(function (container) {
      var group = data.groups[Number(container.getAttribute("data-group"))] || {};
      container.querySelector(".op-select").addEventListener("change", function () {
        drawCompare(container, group, data.runs);
      });
      drawCompare(container, group, data.runs);
    });
  }

  /* ---- key-space heatmap from RUN/keyspace/<cell>.json when no PNG exists ---- */
  // The colour scale is keyramp._heatscale's (embedded by base.html), the same as the PNG's:
  // empty = background, 1 sampled op = the first, clearly visible stop, log scale from 1 to max.
  var HEAT = null;
  function heatScale() {
    if (!HEAT) HEAT = readJSON("keyramp-heat-scale");  // every page has it (base.html)
    return HEAT;
  }

  function heatColour(count, max) {
    var scale = heatScale(), stops = scale.stops;
    if (!(count > 0)) return scale.empty;
    var f = (max <= 1 || count <= 1) ? 0 : Math.min(1, Math.log(count) / Math.log(max));
    var x = f * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), t = x - i;
    return stops[i].map(function (c, k) { return Math.round(c + (stops[i + 1][k] - c) * t); });
  }

  function heatLegend(max) {
    // a strip: the empty swatch, then the scale from 1 to max (log), labelled below
    var legend = document.createElement("div"), strip = document.createElement("canvas"), w = 180;
    legend.className = "heat-legend";
    strip.width = w + 24; strip.height = 10;
    var ctx = strip.getContext("2d"), img = ctx.createImageData(strip.width, 10);
    for (var x = 0; x < strip.width; x++) {
      var rgb = x < 16 ? heatScale().empty : (x < 24 ? [255, 255, 255] : heatColour(Math.exp((x - 24) / (w - 1) * Math.log(Math.max(max, 1))), max));
      for (var y = 0; y < 10; y++) {
        var p = (y * strip.width + x) * 4;
        img.data[p] = rgb[0]; img.data[p + 1] = rgb[1]; img.data[p + 2] = rgb[2]; img.data[p + 3] = 255;
      }
    }
    ctx.putImageData(img, 0, 0);
    var text = document.createElement("span");
    text.textContent = "none · 1 … " + max.toLocaleString("en-US") + " sampled ops per bin (log scale)";
    legend.appendChild(strip);
    legend.appendChild(text);
    return legend;
  }

  function drawHeatmap(el, doc) {
    var counts = doc.counts;
    if (!Array.isArray(counts) || !counts.length || !Array.isArray(counts[0])) {
      el.textContent = "key-space JSON has no counts matrix";
      return;
    }
    // counts[time_bin][bucket] (keyramp keyspace): time on x, key range on y with the first
    // key at the top, like Key Visualizer
    var nt = counts.length, nb = counts[0].length, max = 0;
    counts.forEach(function (row) { row.forEach(function (v) { if (v > max) max = v; }); });
    var canvas = document.createElement("canvas");
    canvas.width = nt; canvas.height = nb;
    canvas.className = "heatmap";
    var ctx = canvas.getContext("2d"), img = ctx.createImageData(nt, nb);
    for (var t = 0; t < nt; t++) {
      for (var b = 0; b < nb; b++) {
        var rgb = heatColour(counts[t][b] || 0, max), p = (b * nt + t) * 4;
        img.data[p] = rgb[0]; img.data[p + 1] = rgb[1]; img.data[p + 2] = rgb[2]; img.data[p + 3] = 255;
      }
    }
    ctx.putImageData(img, 0, 0);
    el.textContent = "";
    el.appendChild(canvas);
    el.appendChild(heatLegend(max));
    var labels = doc.bucket_labels || [], times = doc.time_edges_s || [];
    if (labels.length || times.length) {
      var note = document.createElement("p");
      note.className = "hint";
      note.textContent = (labels.length ? "keys " + labels[0] + " (top) … " + labels[labels.length - 1] + " (bottom)" : "") +
        (times.length ? " · time " + times[0] + "–" + times[times.length - 1] + " s" : "");
      el.appendChild(note);
    }
  }

  function initHeatmaps(root) {
    (root && root.querySelectorAll ? root : document).querySelectorAll("[data-heatmap-src]").forEach(function (el) {
      fetch(el.getAttribute("data-heatmap-src"))
        .then(function (r) { return r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status)); })
        .then(function (doc) { drawHeatmap(el, doc); })
        .catch(function (e) { el.textContent = "key-space heatmap unavailable (" + e.message + ")"; });
    });
  }

  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      charts.forEach(function (c) { c.chart.setSize({ width: chartWidth(c.el), height: 210 }); });
    }, 150);
  });

  document.addEventListener("DOMContentLoaded", function () {
    initRunPage();
    initRunsPage();
    initComparePage();
    initHeatmaps();
  });
})();
