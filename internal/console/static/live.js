// Live parts of the WebCodex console: an element with data-live="URL"
// follows the server-sent events at URL. An event named N goes to the
// element inside it marked data-live-slot="N" (inside its nearest ancestor
// marked data-live-scope, when it has one): a slot marked
// data-live-mode="append" gets the event's data appended as text (never
// parsed as markup); any other slot has its content replaced by the data,
// which is HTML the server rendered with every value escaped. A "reset"
// event empties the append slots (a stream starts over with a tail, also
// after a reconnect). The "end" event closes the stream and sets
// data-live-state="ended"; a stream the server merely dropped is
// reconnected by the browser, one it refused (an error status) sets
// data-live-state="failed". A <details> element follows only while it is
// open, so a page opens streams only for what a person looks at.
(function () {
  "use strict";

  function follow(root) {
    var source = new EventSource(root.getAttribute("data-live"));
    // Slots may sit beside the element, within its nearest ancestor
    // marked data-live-scope (a job's row above its tail).
    var scope = root.closest("[data-live-scope]") || root;
    var names = {};
    scope.querySelectorAll("[data-live-slot]").forEach(function (slot) {
      names[slot.getAttribute("data-live-slot")] = true;
    });
    Object.keys(names).forEach(function (name) {
      source.addEventListener(name, function (ev) {
        var slot = scope.querySelector('[data-live-slot="' + name + '"]');
        if (!slot) {
          return;
        }
        if (slot.getAttribute("data-live-mode") === "append") {
          slot.appendChild(document.createTextNode(ev.data));
          slot.scrollTop = slot.scrollHeight;
        } else {
          slot.innerHTML = ev.data;
        }
      });
    });
    source.addEventListener("reset", function () {
      scope.querySelectorAll('[data-live-mode="append"]').forEach(function (slot) {
        slot.textContent = "";
      });
    });
    source.addEventListener("open", function () {
      root.setAttribute("data-live-state", "open");
    });
    // A refused stream (e.g. too many open) is closed by the browser, not
    // retried: say so on the element.
    source.addEventListener("error", function () {
      if (source.readyState === EventSource.CLOSED) {
        root.setAttribute("data-live-state", "failed");
      }
    });
    source.addEventListener("end", function () {
      source.close();
      root.setAttribute("data-live-state", "ended");
    });
    return source;
  }

  function bind(root) {
    if (root.hasAttribute("data-live-bound")) {
      return;
    }
    root.setAttribute("data-live-bound", "");
    if (root.tagName !== "DETAILS") {
      follow(root);
      return;
    }
    var source = null;
    function sync() {
      if (root.open && !source && root.getAttribute("data-live-state") !== "ended") {
        source = follow(root);
      } else if (!root.open && source) {
        source.close();
        source = null;
        root.removeAttribute("data-live-state");
      }
    }
    root.addEventListener("toggle", sync);
    sync();
  }

  function scan(el) {
    if (el.matches && el.matches("[data-live]")) {
      bind(el);
    }
    el.querySelectorAll("[data-live]").forEach(bind);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      scan(document);
    });
  } else {
    scan(document);
  }
  // Content htmx swaps in is scanned too.
  document.addEventListener("htmx:load", function (ev) {
    scan(ev.detail.elt);
  });
})();
