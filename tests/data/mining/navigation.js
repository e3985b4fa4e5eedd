// Navigations: location and its href, assign/replace, element href/src/action, setAttribute, window.open
function go(section) {
  if (section === "home") {
    window.location = "/";
  } else if (section === "docs") {
    location.href = "https://docs.example.com/start";
  } else if (section === "back") {
    document.location.replace("/dashboard?tab=" + tab);
  } else {
    location.assign(`/sections/${section}`);
  }
}
function help() { window.open("/help/faq.html", "_blank", "noopener"); }
function avatar(img, id) { img.src = "/avatars/" + id + ".png"; }
function nav(a) { a.href = "/profile/edit"; a.setAttribute("href", "/profile/view?id=" + uid); }
function mail() { location.href = "mailto:support@example.com"; }
function js() { link.href = "javascript:void(0)"; }
function anchor() { location.hash = "#top"; link.href = "#section-2"; }
const form = document.forms[0]; form.action = "/account/delete";
function wrapped() { open("GET", "/legacy/ping"); }
