// fetch in its shapes: options object, Headers, JSON bodies, FormData, URLSearchParams
const API_BASE = "/api/v1";

async function loadUser(id) {
  const res = await fetch(`/api/v1/users/${id}?expand=profile`, {
    headers: { "Authorization": "Bearer " + token, "Accept": "application/json" },
  });
  return res.json();
}

function saveUser(user) {
  return fetch("/api/v1/users", {
    method: "PUT",
    headers: new Headers({ "Content-Type": "application/json", "X-Requested-With": "fetch" }),
    body: JSON.stringify({ name: user.name, email: user.email, role: "admin" }),
  });
}

function upload(file) {
  const form = new FormData();
  form.append("avatar", file);
  form.append("caption", "hello");
  return window.fetch(API_BASE + "/uploads", { method: "post", body: form });
}

function search(term) {
  const params = new URLSearchParams({ q: term, page: 1 });
  return fetch("/search?" + params.toString());
}

function track(evt) {
  return fetch("https://metrics.example.net/collect", {
    method: "POST",
    body: new URLSearchParams({ event: evt, ts: Date.now() }),
  });
}

function login(email, password) {
  const body = new URLSearchParams();
  body.set("email", email);
  body.set("password", password);
  return fetch("/account/login", { method: "POST", body });
}

fetch("data/config.json").then(r => r.json());
fetch(someUrl);
