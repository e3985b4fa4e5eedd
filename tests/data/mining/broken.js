<?php
// config loader: this was archived under a .js URL, so it is served as JavaScript
$endpoints = array(
  'login' => '/auth/login.php',
  'api' => "https://api.example.com/v1/",
);
?>
Fatal error: Uncaught Exception in /var/www/html/app.js.php:12
Stack trace: #0 {main} thrown in /var/www/html/app.js.php on line 12
redirect: https://app.example.com/maintenance
