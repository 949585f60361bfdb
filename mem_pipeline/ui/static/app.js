// The memory browser's one script (served as a file: the Content-Security-Policy forbids inline
// script). It keeps the API key in sessionStorage (this tab only; never a cookie, never the
// address), fetches HTML fragments from /ui/api/ with "Authorization: Bearer <key>", and puts
// them in the page. The server escapes every stored value in those fragments; this script
// writes its own messages with textContent only.
//
// Routes live in the address's fragment: #/memories?..., #/search?q=..., #/fact/<id>,
// #/concepts?c=..., #/pending, #/forget. Forms say what they do with data attributes:
//   data-get="page"    -> go to #/page?<the form's fields>
//   data-post="path"   -> POST the fields as JSON to /ui/api/<path>; the answer replaces the
//                         view (or the form itself with data-swap="self"); an X-UI-Go header
//                         names the route the answer shows.
"use strict";

(function () {
  const KEY = "mem_pipeline.key";
  const USER = "mem_pipeline.user";
  const PAGES = ["memories", "search", "fact", "concepts", "pending", "forget"];
  const $ = (id) => document.getElementById(id);
  let me = null; // the key's scope, from /v1/whoami: {key_id, tenant, user_id}
  let seq = 0; // the latest render; an older answer arriving late is dropped

  class Refused extends Error {}

  function key() {
    return sessionStorage.getItem(KEY);
  }

  function chosenUser() {
    // a tenant-wide key names the user it looks at; a user key never names one
    return me && me.user_id === null ? sessionStorage.getItem(USER) : null;
  }

  async function call(method, path, params, body) {
    const k = key();
    if (!k) {
      signOut("");
      throw new Refused("no key");
    }
    const url = new URL(path, location.origin);
    if (params) {
      for (const [name, value] of params) {
        // identity comes from the key (and the picked user), never from an edited address
        if (name !== "user_id" && name !== "tenant") url.searchParams.append(name, value);
      }
    }
    const user = chosenUser();
    if (user) url.searchParams.set("user_id", user);
    const init = {
      method: method,
      headers: { Authorization: "Bearer " + k, Accept: "text/html" },
      credentials: "omit",
      cache: "no-store",
      redirect: "error",
      referrerPolicy: "no-referrer",
    };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(url, init);
    if (resp.status === 401) {
      signOut("The key was refused: it is missing, wrong or revoked.");
      throw new Refused("401");
    }
    const text = await resp.text();
    if (!resp.ok) {
      let message = "The server answered " + resp.status + ".";
      try {
        message = JSON.parse(text).error.message || message;
      } catch (e) {
        // not one of our JSON errors: keep the status line
      }
      throw new Error(message);
    }
    return { text: text, go: resp.headers.get("X-UI-Go") };
  }

  function parseRoute() {
    const raw = location.hash.replace(/^#\/?/, "");
    const cut = raw.indexOf("?");
    const path = cut < 0 ? raw : raw.slice(0, cut);
    const params = new URLSearchParams(cut < 0 ? "" : raw.slice(cut + 1));
    let segs = [];
    try {
      segs = path.split("/").map(decodeURIComponent);
    } catch (e) {
      segs = [];
    }
    const page = PAGES.includes(segs[0]) ? segs[0] : "memories";
    return { page: page, arg: segs[1] || "", params: params };
  }

  function markNav(page) {
    for (const a of document.querySelectorAll("#nav a")) {
      a.classList.toggle("current", a.dataset.page === page);
    }
  }

  function message(text, kind) {
    const p = document.createElement("p");
    p.className = "notice " + kind;
    p.setAttribute("role", kind === "error" ? "alert" : "status");
    p.textContent = text;
    return p;
  }

  function setView(html) {
    const view = $("view");
    view.innerHTML = html; // a fragment of our server: stored text in it is escaped
    view.classList.remove("busy");
    const focus = view.querySelector("[autofocus]");
    if (focus) focus.focus();
  }

  async function render() {
    const route = parseRoute();
    markNav(route.page);
    if (!me) return;
    const view = $("view");
    if (me.user_id === null && !chosenUser()) {
      view.replaceChildren(message("This key covers the tenant " + me.tenant + ": pick a user above.", "warn"));
      return;
    }
    const path =
      route.page === "fact" ? "/ui/api/fact/" + encodeURIComponent(route.arg) : "/ui/api/" + route.page;
    const mine = ++seq;
    view.classList.add("busy");
    try {
      const answer = await call("GET", path, route.params);
      if (mine === seq) setView(answer.text);
    } catch (e) {
      if (!(e instanceof Refused) && mine === seq) {
        view.classList.remove("busy");
        view.replaceChildren(message(e.message, "error"));
      }
    }
  }

  let scheduled = false;
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    setTimeout(function () {
      scheduled = false;
      render();
    }, 0);
  }

  function go(route) {
    if (location.hash === route) schedule();
    else location.hash = route;
  }

  async function post(form, submitter) {
    const data = new FormData(form, submitter || undefined);
    const body = {};
    for (const [name, value] of data) if (typeof value === "string") body[name] = value;
    const buttons = form.querySelectorAll("button");
    for (const b of buttons) b.disabled = true;
    const old = form.querySelector(".notice.error");
    if (old) old.remove();
    try {
      const answer = await call("POST", "/ui/api/" + form.dataset.post, null, body);
      if (form.dataset.swap === "self") {
        const t = document.createElement("template");
        t.innerHTML = answer.text;
        form.replaceWith(t.content);
        return;
      }
      setView(answer.text);
      if (answer.go && answer.go !== location.hash) history.pushState(null, "", answer.go);
      markNav(parseRoute().page);
    } catch (e) {
      if (!(e instanceof Refused)) form.append(message(e.message, "error"));
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  }

  function showLogin(text) {
    $("login").hidden = false;
    $("view").hidden = true;
    $("view").replaceChildren();
    $("nav").hidden = true;
    $("who").hidden = true;
    const err = $("login-error");
    err.textContent = text || "";
    err.hidden = !text;
    $("key-input").focus();
  }

  function signOut(text) {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(USER);
    me = null;
    showLogin(text);
  }

  async function loadUsers() {
    try {
      const answer = await call("GET", "/ui/api/users");
      $("user-list").innerHTML = answer.text;
    } catch (e) {
      // the picker still takes a typed user id
    }
  }

  function showApp() {
    $("login").hidden = true;
    $("view").hidden = false;
    $("nav").hidden = false;
    $("who").hidden = false;
    const user = me.user_id !== null ? me.user_id : chosenUser();
    $("who-text").textContent = "tenant " + me.tenant + " · user " + (user || "(none picked)");
    $("user-form").hidden = me.user_id !== null;
    if (me.user_id === null) {
      $("user-input").value = user || "";
      loadUsers();
    }
  }

  async function start() {
    if (!key()) {
      showLogin("");
      return;
    }
    let resp;
    try {
      resp = await fetch("/v1/whoami", {
        headers: { Authorization: "Bearer " + key() },
        credentials: "omit",
        cache: "no-store",
      });
    } catch (e) {
      showLogin("Cannot reach the server.");
      return;
    }
    if (!resp.ok) {
      signOut(resp.status === 401 ? "That key was refused: it is missing, wrong or revoked." : "The server answered " + resp.status + ".");
      return;
    }
    me = await resp.json();
    showApp();
    render();
  }

  document.addEventListener("submit", function (ev) {
    const form = ev.target;
    if (!(form instanceof HTMLFormElement)) return;
    ev.preventDefault();
    if (form.id === "login-form") {
      const k = $("key-input").value.trim();
      $("key-input").value = "";
      if (k) {
        sessionStorage.setItem(KEY, k);
        start();
      }
    } else if (form.id === "user-form") {
      const user = $("user-input").value.trim();
      if (user) {
        sessionStorage.setItem(USER, user);
        showApp();
        schedule();
      }
    } else if (form.dataset.get) {
      const q = new URLSearchParams();
      for (const [name, value] of new FormData(form)) {
        if (typeof value === "string" && value !== "") q.append(name, value);
      }
      const s = q.toString();
      go("#/" + form.dataset.get + (s ? "?" + s : ""));
    } else if (form.dataset.post) {
      post(form, ev.submitter);
    }
  });

  document.addEventListener("click", function (ev) {
    const a = ev.target instanceof Element ? ev.target.closest("a[href^='#/']") : null;
    // a link to the route already shown: show it again (fresh from the server)
    if (a && a.getAttribute("href") === location.hash) {
      ev.preventDefault();
      schedule();
    }
  });

  document.addEventListener("input", function (ev) {
    // typing again clears the form's last error
    const form = ev.target instanceof Element ? ev.target.closest("form") : null;
    const old = form ? form.querySelector(".notice.error") : null;
    if (old) old.remove();
  });

  window.addEventListener("hashchange", schedule);
  window.addEventListener("popstate", schedule);
  document.addEventListener("DOMContentLoaded", function () {
    $("sign-out").addEventListener("click", function () {
      signOut("Signed out: the key is gone from this tab.");
    });
    start();
  });
})();
