// XMLHttpRequest: open(method, url), setRequestHeader, send(body) on the same receiver
function legacySave(data) {
  var xhr = new XMLHttpRequest();
  xhr.open("POST", "/legacy/save.php", true);
  xhr.setRequestHeader("Content-Type", "application/x-www-form-urlencoded");
  xhr.setRequestHeader("X-CSRF-Token", csrf);
  xhr.send("id=" + data.id + "&title=" + encodeURIComponent(data.title));
}

function legacyLoad(id) {
  var req = new XMLHttpRequest();
  req.open('GET', '/legacy/load.php?id=' + id + '&fmt=json');
  req.onload = function () { render(req.responseText); };
  req.send();
}

function ping() {
  var r = new XMLHttpRequest();
  r.open("HEAD", "https://status.example.com/ping");
  r.send(null);
}
