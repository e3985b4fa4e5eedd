import { h } from "./vendor/preact.mjs";
const BASE = window.__API__ || "https://api.shop-example.com";
export async function getCart() {
  const r = await fetch(`${BASE}/cart`, { credentials: "include" });
  return r.json();
}
export function addToCart(sku, qty) {
  return fetch(BASE + "/cart/items", {
    method: "POST",
    headers: { "content-type": "application/json", "x-client": "web" },
    body: JSON.stringify({ sku, qty }),
  });
}
export function login(email, password) {
  const body = new URLSearchParams();
  body.set("email", email);
  body.set("password", password);
  return fetch("/account/login", { method: "POST", body });
}
const ROUTES = ["/", "/shop", "/shop/:category", "/product/:id", "/checkout/payment"];
const I18N_PATH = "/locales/{{lng}}/{{ns}}.json";
function logout() { document.location.href = "/account/logout?redirect=" + encodeURIComponent(location.pathname); }
function openChat() { window.open("https://chat.shop-example.com/widget?shop=" + shopId, "chat"); }
const ws = new WebSocket("wss://live.shop-example.com/stream");
navigator.sendBeacon("/analytics/beacon", JSON.stringify({ page: location.pathname }));
const img = new Image(); img.src = "https://pixel.tracker-example.net/p.gif?e=view&id=" + id;
console.log("Loaded 2/3 modules from ./vendor");
