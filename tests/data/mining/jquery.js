// jQuery: $.get / $.getJSON / $.post / $.ajax, data keys as query (GET) or body parameters
$(function () {
  $.get("/api/v2/notifications", { since: lastSeen, limit: 20 }, function (rows) { show(rows); });
  $.getJSON("/api/v2/profile.json", function (p) { fill(p); });
  $.post("/account/update", { display_name: n, locale: l });
  $.ajax({
    url: "/api/v2/cart/" + cartId,
    type: "PATCH",
    data: JSON.stringify({ sku: sku, qty: qty }),
    headers: { "X-Cart-Session": session },
  });
  jQuery.ajax("/api/v2/wishlist", { method: "DELETE", data: { sku: sku } });
  $.ajax({ url: "/api/v2/recommendations", data: { seed: s } });
});
