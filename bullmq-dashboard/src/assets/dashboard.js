// bullmq dashboard: live counts and a queue's rows from the page's server-sent events, a
// bulk run's progress, and confirmations.
// The pages work without it; it only keeps numbers fresh.
(function () {
  "use strict";
  var live = document.body && document.body.getAttribute("data-live");
  if (live && window.EventSource) {
    var source = new EventSource(live);
    source.addEventListener("counts", function (event) {
      var msg;
      try { msg = JSON.parse(event.data); } catch (e) { return; }
      var scopes = [];
      document.querySelectorAll("tr[data-conn]").forEach(function (row) {
        if (row.getAttribute("data-conn") === msg.connection &&
            row.getAttribute("data-queue") === msg.queue) { scopes.push(row); }
      });
      if (!document.querySelector("tr[data-conn]")) { scopes.push(document); }
      scopes.forEach(function (scope) {
        Object.keys(msg.counts).forEach(function (state) {
          scope.querySelectorAll('[data-state="' + state + '"]').forEach(function (cell) {
            var text = String(msg.counts[state]);
            if (cell.textContent !== text) { cell.textContent = text; cell.classList.add("changed"); }
          });
        });
        if (msg.rates) {
          Object.keys(msg.rates).forEach(function (rate) {
            scope.querySelectorAll('[data-rate="' + rate + '"]').forEach(function (cell) {
              var value = msg.rates[rate];
              cell.textContent = value === null ? "-" : String(value) + (rate === "failurePct" ? " %" : "");
            });
          });
        }
      });
    });
    // A queue's page lists its events as they come, newest first, the last 20.
    var list = document.querySelector("[data-events]");
    var stale = document.querySelector("[data-stale]");
    // The rows, read again from the server when jobs moved: at most one read at a time,
    // and none while jobs are ticked (a swap would lose them; the notice shows instead).
    var rows = document.querySelector("[data-rows]");
    var reading = false, again = false;
    function reread() {
      if (!rows || rows.querySelector('input[form="selected"]:checked')) {
        if (stale) { stale.hidden = false; }
        return;
      }
      if (reading) { again = true; return; }
      reading = true;
      fetch(rows.getAttribute("data-rows"), { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); })
        .then(function (html) {
          if (!rows.querySelector('input[form="selected"]:checked')) { rows.innerHTML = html; }
          else if (stale) { stale.hidden = false; }
        })
        .catch(function () { if (stale) { stale.hidden = false; } })
        .then(function () {
          reading = false;
          if (again) { again = false; window.setTimeout(reread, 1000); }
        });
    }
    source.addEventListener("job", function (event) {
      var msg;
      reread();
      if (!list) { return; }
      try { msg = JSON.parse(event.data); } catch (e) { return; }
      var item = document.createElement("li");
      var when = document.createElement("span");
      when.className = "muted";
      when.textContent = new Date().toLocaleTimeString() + " ";
      item.appendChild(when);
      item.appendChild(document.createTextNode(msg.event + " "));
      if (msg.jobId) {
        var link = document.createElement("a");
        link.href = window.location.pathname + "/jobs/" + encodeURIComponent(msg.jobId);
        link.textContent = msg.jobId;
        item.appendChild(link);
      }
      list.insertBefore(item, list.firstChild);
      while (list.children.length > 20) { list.removeChild(list.lastChild); }
    });
  }
  // A bulk run's page reloads itself until the run has finished.
  if (document.querySelector("[data-reload]")) {
    window.setTimeout(function () { window.location.reload(); }, 1000);
  }
  // Delegated, so rows swapped in live ask too.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button.danger");
    if (button && !window.confirm(button.textContent.trim() + "?")) { event.preventDefault(); }
  });
})();
