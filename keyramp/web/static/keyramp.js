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

  /* ---- the one chart helper: uPlot with round time ticks in one unit, gaps for missing points,
     threshold lines, markers (warm-up, schedule steps) and the spans that breach a threshold ---- */
  var THRESHOLD = "#c026d3", MARKER = "#0f766e", BREACH = "rgba(192,38,211,0.10)";
  var TIME_UNITS = [[7200, 3600, "h", [1800, 3600, 7200, 10800, 21600, 43200, 86400]],
                    [180, 60, "min", [60, 120, 300, 600, 900, 1200, 1800, 3600]],
                    [0, 1, "s", [1, 2, 5, 10, 15, 20, 30, 60]]];

  function timeUnit(max) {
    for (var i = 0; i < TIME_UNITS.length; i++) if (max > TIME_UNITS[i][0]) return TIME_UNITS[i];
    return TIME_UNITS[TIME_UNITS.length - 1];
  }

  function fmtNum(v) {
    if (v == null || !isFinite(v)) return "–";
    var a = Math.abs(v);
    if (a >= 1000) return Math.round(v).toLocaleString("en-US");
    return String(Number(v.toPrecision(3)));
  }

  function fmtSeconds(s) {  // one value (a legend, a note): in the unit that reads best for it
    if (s == null) return "–";
    var u = timeUnit(Math.abs(s));
    return fmtNum(s / u[1]) + " " + u[2];
  }

  function timeAxis() {  // every tick of one axis in one unit (0, 30 min, 60 min, not "0 s / 88 min / 2.9 h")
    return {
      size: 36,
      incrs: function (u) { return timeUnit(u.scales.x.max - u.scales.x.min)[3]; },
      values: function (u, vals) {
        var unit = timeUnit(u.scales.x.max - u.scales.x.min);
        return vals.map(function (v) { return v === 0 ? "0" : fmtNum(v / unit[1]) + " " + unit[2]; });
      }
    };
  }

  function quantileAxis() {  // HdrHistogram's percentile axis: x = 1/(1-q) on a log scale
    return {
      size: 36,
      splits: function (u) {
        var out = [], max = u.scales.x.max;
        for (var x = 1; x <= max * 1.0001; x *= 10) out.push(x);
        return out;
      },
      values: function (u, vals) { return vals.map(quantileText); }
    };
  }

  function quantileText(x) {
    if (x == null) return "–";
    var q = 100 * (1 - 1 / x);
    return (q >= 99 ? String(Number(q.toPrecision(Math.max(2, Math.round(Math.log10(x)) + 1)))) : String(Math.round(q))) + " %";
  }

  function marksPlugin(spec) {
    function px(n) { return n * uPlot.pxRatio; }
    return {
      hooks: {
        drawClear: [function (u) {  // breached spans under the data
          var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
          ctx.save();
          ctx.fillStyle = BREACH;
          (spec.spans || []).forEach(function (sp) {
            var a = u.valToPos(sp[0], "x", true), b = u.valToPos(sp[1], "x", true);
            ctx.fillRect(a, top, Math.max(b - a, px(2)), h);
          });
          ctx.restore();
        }],
        draw: [function (u) {
          var ctx = u.ctx, left = u.bbox.left, right = left + u.bbox.width, top = u.bbox.top, bottom = top + u.bbox.height;
          ctx.save();
          ctx.font = px(11) + "px system-ui, sans-serif";
          ctx.lineWidth = px(1.5);
          (spec.lines || []).forEach(function (l) {  // thresholds at their limit, labelled at the right
            var y = u.valToPos(l.value, l.scale || "y", true);
            if (!(y >= top - 1 && y <= bottom + 1)) return;
            ctx.strokeStyle = THRESHOLD; ctx.fillStyle = THRESHOLD; ctx.setLineDash([px(6), px(3)]);
            ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(right, y); ctx.stroke();
            ctx.textAlign = "right"; ctx.textBaseline = "bottom";
            ctx.fillText(l.label, right - px(4), y - px(2));
          });
          var lastLabelEnd = -Infinity;
          (spec.markers || []).forEach(function (m) {  // warm-up end, schedule steps: labelled where there is room
            var x = u.valToPos(m.t, "x", true);
            if (!(x >= left - 1 && x <= right + 1)) return;
            ctx.strokeStyle = MARKER; ctx.fillStyle = MARKER; ctx.setLineDash([px(2), px(3)]);
            ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, bottom); ctx.stroke();
            var text = m.short || m.label, w = ctx.measureText(text).width;
            if (x + px(3) > lastLabelEnd && x + px(3) + w < right) {
              ctx.textAlign = "left"; ctx.textBaseline = "top";
              ctx.fillText(text, x + px(3), top + px(2));
              lastLabelEnd = x + px(3) + w + px(8);
            }
          });
          ctx.restore();
        }]
      }
    };
  }

  function draw(el, spec) {
    el.textContent = "";
    var lines = spec.lines || [];
    // the percentile axis ends at the maximum (uPlot would round a log range up to the next decade)
    var x = spec.x === "quantile" ? { time: false, distr: 3, log: 10, range: function (u, min, max) { return [1, max]; } }
                                  : { time: false };
    var opts = {
      width: chartWidth(el),
      height: 210,
      cursor: { drag: { x: spec.x !== "quantile", y: false } },
      // y from 0 (a rate or latency axis that starts mid-range exaggerates noise), and up to
      // the thresholds drawn on it, so a line above the data is still seen
      scales: Object.assign({ x: x, y: { range: function (u, min, max) {
        var top = Math.max(max || 0, 0);
        lines.forEach(function (l) { if ((l.scale || "y") === "y" && l.value > top) top = l.value; });
        return [0, top > 0 ? top * 1.08 : 1];
      } } }, spec.scales || {}),
      legend: { live: true },
      axes: [spec.x === "quantile" ? quantileAxis() : timeAxis(),
             { label: spec.yLabel, size: 56, labelSize: 18 }].concat(spec.axes || []),
      series: [{ label: spec.x === "quantile" ? "percentile" : "t",
                 value: function (u, v) { return spec.x === "quantile" ? quantileText(v) : fmtSeconds(v); } }].concat(spec.series),
      plugins: [marksPlugin(spec)]
    };
    if (spec.bands) opts.bands = spec.bands;
    var chart = new uPlot(opts, spec.data, el);
    el.setAttribute("data-lines", String(lines.length));
    el.setAttribute("data-markers", String((spec.markers || []).length));
    el.setAttribute("data-breaches", String((spec.spans || []).length));
    charts.push({ el: el, chart: chart });
    return chart;
  }

  function line(label, colour, extra) {
    var s = { label: label, stroke: colour, width: 1.6, spanGaps: false,
              value: function (u, v) { return v == null ? "–" : fmtNum(v); } };
    for (var k in (extra || {})) s[k] = extra[k];
    return s;
  }

  function has(values) {
    return !!values && values.some(function (v) { return v != null; });
  }

  function destroyIn(container) {
    charts = charts.filter(function (c) {
      if (container.contains(c.el)) { c.chart.destroy(); return false; }
      return true;
    });
  }

  /* a chart's thresholds: constant limits as lines, a limit that follows the target as a series;
     the spans where its series breaches them */
  function thresholdsOn(s, chart, scale, factor) {
    var out = { lines: [], spans: [], series: [], data: [] };
    (s.thresholds || []).filter(function (t) { return t.chart === chart; }).forEach(function (t) {
      if (t.values) {
        out.series.push(line(t.label, THRESHOLD, { dash: [6, 3], width: 1.2 }));
        out.data.push(t.values);
      } else {
        out.lines.push({ value: t.limit * (factor || 1), scale: scale, label: t.label });
      }
      out.spans = out.spans.concat(t.breaches || []);
    });
    return out;
  }

  /* ---- run page and cell page: per cell, one operation at a time ---- */
  function drawLatency(el, s, markers) {
    // p50, p95, p99 as bands (p95 absent in runs recorded before it); a second without completions is a gap
    var th = thresholdsOn(s, "latency", "y");
    var series = [line("p50", PALETTE[0])], data = [s.t, s.p50_ms], bands = [];
    if (has(s.p95_ms)) {
      series.push(line("p95", PALETTE[3]));
      data.push(s.p95_ms);
      bands.push({ series: [2, 1], fill: "rgba(37,99,235,0.10)" });
    }
    series.push(line("p99", PALETTE[1]));
    data.push(s.p99_ms);
    bands.push({ series: [data.length - 1, data.length - 2], fill: "rgba(220,38,38,0.08)" });
    draw(el, { yLabel: "ms", series: series, data: data, bands: bands, lines: th.lines, spans: th.spans,
               markers: markers });
  }

  function drawThroughput(el, s, markers) {
    var th = thresholdsOn(s, "throughput", "y");
    var series = [line("achieved", PALETTE[2], { fill: "rgba(22,163,74,0.08)" })];
    var data = [s.t, s.ops_per_s], bands = null, axes = [], scales = {};
    if (s.ops_max_per_s && s.ops_max_per_s.length) {
      // the bucket's fastest and slowest second as a band: a stall is not averaged away
      series.push(line("fastest s", "rgba(22,163,74,0.35)", { width: 0.6 }));
      series.push(line("slowest s", "rgba(22,163,74,0.35)", { width: 0.6 }));
      data.push(s.ops_max_per_s, s.ops_min_per_s);
      bands = [{ series: [2, 3], fill: "rgba(22,163,74,0.14)" }];
    }
    if (s.target_ops_per_s && s.target_ops_per_s.length) {
      series.push(line("target", "#6b7280", { dash: [6, 4] }));
      data.push(s.target_ops_per_s);
    }
    series = series.concat(th.series);
    data = data.concat(th.data);
    if (has(s.in_flight)) {  // next to the rate: how many operations were in service (Little's law)
      scales.n = { range: function (u, min, max) { return [0, max > 0 ? max * 1.15 : 1]; } };
      axes.push({ scale: "n", side: 1, label: "in flight", size: 48, labelSize: 18, grid: { show: false } });
      series.push(line("in flight", "#a16207", { scale: "n", width: 1.2, dash: [2, 2] }));
      data.push(s.in_flight);
    }
    draw(el, { yLabel: "ops/s", series: series, data: data, bands: bands, scales: scales, axes: axes,
               lines: th.lines, spans: th.spans, markers: markers });
  }

  function drawErrors(el, s, markers) {
    var series = [line("all errors", "#111827", { width: 1 })], data = [s.t, s.errors_per_s];
    Object.keys(s.error_classes || {}).sort().forEach(function (cls, i) {
      series.push(line(cls, CLASS_COLOURS[i % CLASS_COLOURS.length]));
      data.push(s.error_classes[cls]);
    });
    var th = thresholdsOn(s, "errors", "pct", 100), axes = [], scales = {};
    if (th.lines.length || (s.errors_per_s || []).some(function (v) { return v > 0; })) {
      // the error rate on its own axis, where an error_rate threshold is drawn
      scales.pct = { range: function (u, min, max) {
        var top = Math.max(max || 0, 0);
        th.lines.forEach(function (l) { if (l.value > top) top = l.value; });
        return [0, top > 0 ? top * 1.08 : 1];
      } };
      axes.push({ scale: "pct", side: 1, label: "error %", size: 48, labelSize: 18, grid: { show: false } });
      series.push(line("error %", "#7c2d12", { scale: "pct", width: 1.2, dash: [2, 2] }));
      data.push((s.error_rate || []).map(function (v) { return v == null ? null : v * 100; }));
    }
    draw(el, { yLabel: "errors/s", series: series, data: data, scales: scales, axes: axes, lines: th.lines,
               spans: th.spans, markers: markers });
  }

  function drawDistribution(el, d, s) {
    if (!d || !d.x || d.x.length < 2) {
      el.textContent = "No HdrHistogram log for this operation.";
      return;
    }
    var series = [line("latency", PALETTE[1])], data = [d.x, d.latency_ms];
    if (d.service_ms && d.service_ms.length === d.x.length) {
      series.push(line("service time", PALETTE[0], { dash: [4, 3] }));
      data.push(d.service_ms);
    }
    var th = thresholdsOn(s || {}, "latency", "y");
    draw(el, { x: "quantile", yLabel: "ms", series: series, data: data, lines: th.lines });
  }

  function drawRunCell(container, doc) {
    var op = container.querySelector(".op-select").value;
    var s = doc.ops[op];
    if (!s) return;
    destroyIn(container);
    var markers = doc.markers || [];
    drawLatency(container.querySelector('[data-kind="latency"]'), s, markers);
    drawThroughput(container.querySelector('[data-kind="throughput"]'), s, markers);
    drawErrors(container.querySelector('[data-kind="errors"]'), s, markers);
    var dist = container.querySelector('[data-kind="distribution"]');
    if (dist) drawDistribution(dist, (doc.distribution || {})[op], s);

    var note = container.querySelector(".bucket-note");
    if (note) {
      var text = s.bucket_s > 1
        ? "Each point covers " + fmtSeconds(s.bucket_s) + ": throughput, p50 and in-flight are averaged (band: slowest to fastest second), p95 and p99 are the worst second."
        : "One point per second.";
      text += " A gap: no operation completed in that second (no latency to show).";
      if (markers.length) text += " Markers: " + markers.map(function (m) { return (m.t ? "at " + fmtSeconds(m.t) + ", " : "") + m.label; }).join(" · ") + ".";
      var breached = (s.thresholds || []).filter(function (t) { return (t.breaches || []).length; });
      if (breached.length) text += " Shaded: points over " + breached.map(function (t) { return t.label; }).join(", ") + ".";
      note.textContent = text;
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
        select.onchange = function () { drawRunCell(container, doc); };
        drawRunCell(container, doc);
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
          setTimeout(tick, doc.counting_down ? 1000 : LIVE_POLL_MS);  // a warm-up's countdown: every second
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
    draw(container.querySelector('[data-kind="cmp-p99"]'), { yLabel: "ms", series: p99, data: p99Data });
    draw(container.querySelector('[data-kind="cmp-ops"]'), { yLabel: "ops/s", series: ops, data: opsData });
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
  // The colour scale is keyramp.core._heatscale's (embedded by base.html), the same as the PNG's:
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
    el.appendChild(heatFrame(canvas, doc));
    el.appendChild(heatLegend(max));
  }

  function node(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  /* the heatmap's axes: key labels down the left (the first key at the top, like Key Visualizer),
     time below in round steps of one unit; positioned in % of the plot (CSSOM, which the CSP allows) */
  function heatFrame(canvas, doc) {
    var frame = node("div", "heat-frame"), keys = node("div", "heat-y"), plot = node("div", "heat-plot"),
        times = node("div", "heat-x");
    plot.appendChild(canvas);
    var labels = doc.bucket_labels || [], n = labels.length - 1;
    [0, 0.25, 0.5, 0.75, 1].forEach(function (q, i, all) {
      if (n < 1 || (i > 0 && Math.round(q * n) === Math.round(all[i - 1] * n))) return;
      var text = String(labels[Math.round(q * n)]);
      var tick = node("span", "heat-tick" + (q === 0 ? " first" : q === 1 ? " last" : ""),
                      text.length > 22 ? text.slice(0, 21) + "…" : text);
      tick.title = text;
      tick.style.top = (q * 100) + "%";
      keys.appendChild(tick);
    });
    var edges = doc.time_edges_s || [], t0 = edges.length ? edges[0] : 0, t1 = edges.length ? edges[edges.length - 1] : 0;
    if (t1 > t0) {
      var unit = timeUnit(t1 - t0);
      var step = unit[3].filter(function (inc) { return (t1 - t0) / inc <= 6; })[0] || unit[3][unit[3].length - 1];
      for (var v = Math.ceil(t0 / step) * step; v <= t1 + 1e-9; v += step) {
        var tick = node("span", "heat-tick" + (v === t0 ? " first" : t1 - v < 1e-9 ? " last" : ""),
                        v === 0 ? "0" : fmtNum(v / unit[1]) + " " + unit[2]);
        tick.style.left = ((v - t0) / (t1 - t0) * 100) + "%";
        times.appendChild(tick);
      }
    }
    [keys, plot, node("div"), times, node("div", "heat-title heat-key-title", "key range (sorted: the first key at the top)"),
     node("div", "heat-title", "time since the measured phase started")].forEach(function (e) {
      frame.appendChild(e);
    });
    return frame;
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
