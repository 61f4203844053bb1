// mneme admin page: see, search, correct, delete and export a user's memories, and see (and
// correct) what mneme believes about them: their profile, by aspect.
// Plain DOM code, no build step. Memory texts are user data: they are only ever set as
// textContent, never as HTML.
"use strict";

const $ = (sel) => document.querySelector(sel);
const api = new URL("v1/", document.baseURI);
const state = { user: null, query: null, view: "memories" };

function setStatus(text, isError = false) {
  const el = $("#status");
  el.textContent = text;
  el.classList.toggle("error", isError);
}

function key() {
  return sessionStorage.getItem("mneme-key") || "";
}

async function call(method, path, body) {
  const headers = { Authorization: `Bearer ${key()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(new URL(path, api), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await resp.json().catch(() => null);
  if (!resp.ok) {
    let detail = data && data.detail;
    if (Array.isArray(detail)) detail = detail.map((d) => d.msg).join("; ");
    throw new Error(`${resp.status}: ${detail || resp.statusText}`);
  }
  return data;
}

const userPath = () => `users/${encodeURIComponent(state.user)}`;

function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

function sourceOf(m) {
  const s = m.source || {};
  const parts = [s.actor || "?"];
  if (s.speaker) parts.push(s.speaker);
  if (s.thread_id) parts.push(`thread ${s.thread_id}`);
  return parts.join(" · ");
}

function render(items, isSearch) {
  const rows = $("#rows");
  rows.replaceChildren();
  const tpl = $("#row-template");
  for (const m of items) {
    const tr = tpl.content.firstElementChild.cloneNode(true);
    tr.dataset.id = m.id;
    const kind = document.createElement("span");
    kind.textContent = m.kind;
    tr.querySelector(".kind").append(kind);
    const text = tr.querySelector(".text");
    text.textContent = m.text;
    if (isSearch) {
      const score = document.createElement("span");
      score.className = "score";
      score.textContent = m.score.toFixed(2);
      text.append(score);
    }
    tr.querySelector(".source").textContent = m.source ? sourceOf(m) : (m.speaker || "");
    tr.querySelector(".time").textContent = when(m.updated_at);
    tr.querySelector(".time").title = `created ${when(m.created_at)}`;
    tr.querySelector(".history").addEventListener("click", () => toggleHistory(tr, m));
    tr.querySelector(".edit").addEventListener("click", () => startEdit(tr, m));
    tr.querySelector(".delete").addEventListener("click", () => remove(m));
    rows.append(tr);
  }
}

async function load() {
  if (!state.user) return;
  $("#views").hidden = false;
  for (const name of ["memories", "profile"]) {
    const button = $(`#view-${name}`);
    button.classList.toggle("current", state.view === name);
    button.setAttribute("aria-pressed", String(state.view === name));
    $(`#${name}`).hidden = state.view !== name;
  }
  if (state.view === "profile") {
    await loadProfile();
    return;
  }
  try {
    if (state.query) {
      const q = encodeURIComponent(state.query);
      const data = await call("GET", `${userPath()}/memories?q=${q}&limit=20`);
      render(data.items, true);
      $("#summary").textContent = `${data.items.length} found for “${state.query}” (best first)`;
    } else {
      const data = await call("GET", `${userPath()}/memories?limit=1000`);
      render(data.items, false);
      const more = data.total > data.items.length ? `, first ${data.items.length} shown` : "";
      $("#summary").textContent = `${data.total} current memories of ${state.user}${more}`;
    }
    setStatus("");
  } catch (err) {
    setStatus(err.message, true);
  }
}

async function toggleHistory(tr, m) {
  const next = tr.nextElementSibling;
  if (next && next.classList.contains("history-row")) {
    next.remove();
    return;
  }
  try {
    const data = await call("GET", `${userPath()}/memories/${encodeURIComponent(m.id)}/history`);
    const row = document.createElement("tr");
    row.className = "history-row";
    const td = document.createElement("td");
    td.colSpan = 5;
    const list = document.createElement("ol");
    for (const h of data.items) {
      const li = document.createElement("li");
      const change = h.old_text && h.new_text ? `“${h.old_text}” → “${h.new_text}”` : (h.new_text || h.old_text || "");
      li.textContent = `${when(h.at)} · ${h.operation} by ${h.actor}${change ? ": " + change : ""}${h.reason ? " (" + h.reason + ")" : ""}`;
      list.append(li);
    }
    td.append(list);
    row.append(td);
    tr.after(row);
  } catch (err) {
    setStatus(err.message, true);
  }
}

function startEdit(item, m) {
  const cell = item.querySelector(".text");
  if (cell.querySelector("textarea")) return;
  const area = document.createElement("textarea");
  area.value = m.text;
  const save = document.createElement("button");
  save.type = "button";
  save.className = "save";
  save.textContent = "Save";
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.className = "cancel";
  cancel.textContent = "Cancel";
  cell.replaceChildren(area, save, cancel);
  area.focus();
  cancel.addEventListener("click", load);
  save.addEventListener("click", async () => {
    try {
      await call("PATCH", `${userPath()}/memories/${encodeURIComponent(m.id)}`, { text: area.value });
      setStatus("Saved.");
      await load();
      setStatus("Saved.");
    } catch (err) {
      setStatus(err.message, true);
    }
  });
}

async function remove(m) {
  if (!window.confirm(`Forget this memory?\n\n${m.text}`)) return;
  try {
    await call("DELETE", `${userPath()}/memories/${encodeURIComponent(m.id)}`);
    await load();
    setStatus("Deleted.");
  } catch (err) {
    setStatus(err.message, true);
  }
}

// -- the profile: what mneme believes about the user, by aspect, hard limits first ----------

function meta(m) {
  const parts = [`since ${when(m.since)}`, `v${m.version}`, `by ${sourceOf(m)}`];
  if (!m.confirmed) parts.push("inferred");
  if (m.also.length) parts.push(`also about ${m.also.join(", ")}`);
  return parts.join(" · ");
}

function renderProfile(view) {
  const box = $("#aspects");
  box.replaceChildren();
  for (const group of view.aspects) {
    const section = $("#aspect-template").content.firstElementChild.cloneNode(true);
    section.dataset.aspect = group.aspect;
    section.classList.toggle("hard", group.constraint);
    section.querySelector(".label").textContent = group.label;
    section.querySelector(".label-zh").textContent = group.label_zh;
    section.querySelector(".area").textContent = group.area;
    section.querySelector(".badge.hard").hidden = !group.constraint;
    section.querySelector(".badge.single").hidden = !group.single;
    section.querySelector(".conflict").hidden = !group.conflicting;
    const list = section.querySelector(".beliefs");
    for (const m of group.memories) {
      const li = $("#belief-template").content.firstElementChild.cloneNode(true);
      li.dataset.id = m.id;
      li.classList.toggle("constraint", m.constraint);
      li.querySelector(".badge.constraint").hidden = !m.constraint;
      li.querySelector(".text").textContent = m.text;
      li.querySelector(".meta").textContent = meta(m);
      li.querySelector(".meta").title = `memory ${m.id}`;
      const earlier = li.querySelector(".earlier");
      for (const e of m.earlier) {
        const item = document.createElement("li");
        item.className = "earlier-value";
        item.dataset.change = e.change;
        item.textContent = `${e.change === "edited" ? "edited from" : "before"}: ${e.text} (until ${when(e.until)})`;
        earlier.append(item);
      }
      li.querySelector(".edit").addEventListener("click", () => startEdit(li, m));
      li.querySelector(".delete").addEventListener("click", () => remove(m));
      list.append(li);
    }
    box.append(section);
  }
}

async function loadProfile() {
  try {
    const view = await call("GET", `${userPath()}/profile`);
    renderProfile(view);
    const hard = view.aspects.filter((a) => a.constraint).length;
    $("#profile-summary").textContent = view.total
      ? `What mneme believes about ${view.user_id}: ${view.total} memories on ${view.aspects.length} aspects, the ${hard} with hard limits first.`
      : `Nothing known about ${view.user_id} yet: no memory is about an aspect of them.`;
    setStatus("");
  } catch (err) {
    setStatus(err.message, true);
  }
}

async function exportAll() {
  try {
    const data = await call("GET", `${userPath()}/export`);
    const blob = new Blob([JSON.stringify(data, null, 2)], { type: "application/json" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = `mneme-${state.user}.json`;
    document.body.append(a);
    a.click();
    a.remove();
    setStatus(`Exported ${data.memories.length} memories of ${state.user}.`);
  } catch (err) {
    setStatus(err.message, true);
  }
}

async function loadUsers() {
  try {
    const data = await call("GET", "users");
    const list = $("#users");
    list.replaceChildren();
    for (const u of data.users) {
      const opt = document.createElement("option");
      opt.value = u;
      list.append(opt);
    }
    setStatus(`Connected: ${data.users.length} user(s) ${data.all_users ? "with memories" : "reachable"}.`);
  } catch (err) {
    setStatus(err.message, true);
  }
}

$("#key-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  sessionStorage.setItem("mneme-key", $("#key").value.trim());
  loadUsers();
});
$("#user-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  state.user = $("#user").value.trim();
  state.query = null;
  $("#q").value = "";
  load();
});
$("#search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  state.query = $("#q").value.trim() || null;
  load();
});
$("#clear").addEventListener("click", () => {
  $("#q").value = "";
  state.query = null;
  load();
});
$("#export").addEventListener("click", exportAll);
$("#view-memories").addEventListener("click", () => {
  state.view = "memories";
  load();
});
$("#view-profile").addEventListener("click", () => {
  state.view = "profile";
  load();
});

if (key()) {
  $("#key").value = key();
  loadUsers();
}
