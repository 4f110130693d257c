// reach console: keeps the approvals list current without a reload (polling), and
// counts waiting times up. No framework, no build step; the pages work without it.
(function () {
  "use strict";
  var POLL_MS = 2000;

  function ago(seconds) {
    var s = Math.max(0, Math.floor(seconds));
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min";
    if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
    return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
  }

  function tick() {
    var now = Date.now() / 1000;
    document.querySelectorAll("time[data-since]").forEach(function (el) {
      el.textContent = ago(now - parseFloat(el.getAttribute("data-since")));
    });
  }

  function version(box) {
    var el = box.querySelector("[data-version]");
    return el ? el.getAttribute("data-version") : "";
  }

  function replace(box, html) {
    // keep what the operator is typing and where the focus is
    var typed = {};
    box.querySelectorAll("input[name=reason]").forEach(function (el) { if (el.value) typed[el.id] = el.value; });
    var focused = document.activeElement && box.contains(document.activeElement) ? document.activeElement.id : null;
    box.innerHTML = html;
    Object.keys(typed).forEach(function (id) {
      var el = document.getElementById(id);
      if (el) el.value = typed[id];
    });
    if (focused) {
      var again = document.getElementById(focused);
      if (again) again.focus();
    }
    tick();
  }

  function poll(box) {
    var url = box.getAttribute("data-poll") + "&v=" + encodeURIComponent(version(box));
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (resp) {
        if (resp.status === 401) {
          box.setAttribute("data-stale", "1");
          var note = document.getElementById("session-ended");
          if (!note) {
            note = document.createElement("p");
            note.id = "session-ended";
            note.className = "banner error";
            note.setAttribute("role", "alert");
            note.innerHTML = 'Your session ended. <a href="/console/login">Log in again</a>.';
            box.parentNode.insertBefore(note, box);
          }
          return null;
        }
        if (resp.status !== 200) return null;
        return resp.text();
      })
      .then(function (html) { if (html !== null && html !== undefined) replace(box, html); })
      .catch(function () { /* the server is restarting: try again next time */ })
      .then(function () { if (!box.getAttribute("data-stale")) setTimeout(function () { poll(box); }, POLL_MS); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("approvals");
    if (box) setTimeout(function () { poll(box); }, POLL_MS);
    setInterval(tick, 1000);
    document.querySelectorAll("[data-autosubmit]").forEach(function (el) {
      el.addEventListener("change", function () { el.form.submit(); });
    });
  });
})();
