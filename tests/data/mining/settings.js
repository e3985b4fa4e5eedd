// Leaked settings (fake values) and decoys that look like secrets but are not
var config = {
  awsKeyId: "AKIALH2VPM55L4S3QMQH",
  aws_secret_access_key: "PwEvEzUz+BMHaRZCZSIIMoK9s+uyA3q09mzHR8l/",
  githubToken: "ghp_jEjFfpPfIwn76YOzYL0IRWHaiXS24fEz0zly",
  slack: "xoxb-624652559426-8096229608887-JgaXMXqBVzENJE3A1415Yjol",
  alerts: "https://hooks.slack.com/services/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",
  mapsKey: "AIzabI3fGZJlBKuVr4lnPH7lCj7OulCU_WZN6cy",
  stripe: "sk_live_QnbfzQWxTeKarnpIiTPub8io",
  session: "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAiMTIzNDU2Nzg5MCIsICJuYW1lIjogInRyYXdsIn0.BcvMEy0iwd6F6k_9Ay4PH3MrzWQHVBeisYil-HSB9ij",
  client_secret: "MTYwGdNDsZSsT6NamQO3",
};
var key = `-----BEGIN RSA PRIVATE KEY-----
UtRQb3SzeKAExtSzceqPthEuRMPPQHKTD8V11UoJ7tA+UD7Ky9sHNXSH+NyLcXDY
-----END RSA PRIVATE KEY-----`;
// decoys
var docs = { awsKeyId: "AKIAIOSFODNN7EXAMPLE", password: "changeme", token: "REPLACE_WITH_YOUR_TOKEN_HERE" };
var weak = { apiKey: "aaaaaaaaaaaaaaaaaaaaaaaa", publishable: "pk_live_TTCrbHBR7VGkrAi5FNpNrEdH", short: "ghp_tooShort123" };
var env = { secret: process.env.APP_SECRET, auth_token: "${AUTH_TOKEN_FROM_ENV_VAR}", half: "eyJhbGciOi" };
