// Bare literals: what the precision policy keeps and what it drops
export const routes = {
  users: "/api/v3/users",
  graph: "https://api.example.com/graphql",
  legacy: "legacy/report.aspx",
  feed: "v2/feed",
  gql: "graphql",
};
const cdn = "//cdn.example-static.com/lib/app.css";
const ws = "wss://realtime.example.com/socket";
const tmpl = `/api/v3/orders/${orderId}/items`;
const rel = "./chunk-4f2a.js";
const style = "./theme.css";
const data = "./fixtures/data.json";
const parent = "../lib/util";
const mime = "application/json";
const html = "text/html";
const date = "2024/01/31";
const fraction = "1/2";
const scoped = "@babel/runtime/helpers";
const pkg = "react-dom/client";
const svg = "http://www.w3.org/2000/svg";
const prose = "Please go to /settings to change it";
const single = "/x";
const number = "/404";
const dataUri = "data:image/png;base64,iVBORw0KGgo=";
const blob = "blob:https://app.example.com/1234";
const route = "/checkout";
const base = apiRoot + "/v3/invoices";
import("./lazy-module.js");
