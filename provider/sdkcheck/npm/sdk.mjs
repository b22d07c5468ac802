// Runs providers' official Node.js SDKs for provider/sdkcheck's tests, over
// JSON on stdin and stdout:
//
//   node sdk.mjs verify CODE  {"secret", "requests": [{"method", "url", "header": {name: [value]}, "body": base64,
//                             "receivedAt": unix milliseconds}]}
//                             → [{"ok": bool, "why": string}], one per request: whether the SDK accepts it
//   node sdk.mjs sign CODE    {"secret", "body": string, "at": unix milliseconds}
//                             → {"header": {name: value}, "body": string}: the delivery as the SDK signs it
//
// Each SDK is called the way its documentation tells a receiver to call it;
// an SDK that throws refuses. SDKs that judge a signed time judge it against
// the wall clock (only Bolt can be told the time of receipt).
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

// Each SDK is loaded only when its provider is asked for: some are large.
// The SDKs' clients want credentials to exist; none is used.
const sdks = {
  github: () => import("@octokit/webhooks-methods"),
  gocardless: () => import("gocardless-nodejs/webhooks"),
  discord: () => import("discord-interactions"),
  mux: async () => new (await import("@mux/mux-node")).default({ tokenId: "sdkcheck", tokenSecret: "sdkcheck" }),
  workos: async () => new (await import("@workos-inc/node")).WorkOS("sk_test_sdkcheck"),
  adyen: async () => new (require("@adyen/api-library").hmacValidator)(),
  onfido: async () => require("@onfido/api"),
  coinbase_commerce: async () => require("coinbase-commerce-node").Webhook,
  square: async () => (await import("square")).WebhooksHelper,
  linear: async () => (await import("@linear/sdk/webhooks")).LinearWebhookClient,
  elevenlabs: async () => new (await import("@elevenlabs/elevenlabs-js")).ElevenLabsClient({ apiKey: "sdkcheck" }),
  slack: async () => (await import("@slack/bolt")).verifySlackRequest,
};

// header is one header of a request, "" when absent (names are matched
// without regard to case, as HTTP does).
function header(req, name) {
  for (const [k, v] of Object.entries(req.header)) {
    if (k.toLowerCase() === name.toLowerCase()) return v[0] ?? "";
  }
  return "";
}

// adyenItems are the NotificationRequestItems of an Adyen notification.
function adyenItems(notification) {
  return (notification.notificationItems ?? []).map((w) => w.NotificationRequestItem);
}

// verifiers: (the provider's SDK, request with its body as a string, secret)
// → accepted (or throws).
const verifiers = {
  github: (sdk, r, secret) => sdk.verify(secret, r.body, header(r, "X-Hub-Signature-256")),
  workos: async (workos, r, secret) => {
    await workos.webhooks.constructEvent({ payload: JSON.parse(r.body), sigHeader: header(r, "WorkOS-Signature"), secret });
    return true;
  },
  mux: async (mux, r, secret) => {
    await mux.webhooks.verifySignature(r.body, Object.fromEntries(Object.entries(r.header).map(([k, v]) => [k, v[0]])), secret);
    return true;
  },
  gocardless: (sdk, r, secret) => {
    sdk.verifySignature(r.body, secret, header(r, "Webhook-Signature"));
    return true;
  },
  adyen: (validator, r, secret) => {
    const items = adyenItems(JSON.parse(r.body));
    return items.length > 0 && items.every((item) => validator.validateHMAC(item, secret));
  },
  onfido: (sdk, r, secret) => {
    new sdk.WebhookEventVerifier(secret).readPayload(r.body, header(r, "X-SHA2-Signature"));
    return true;
  },
  coinbase_commerce: (webhook, r, secret) => webhook.verifySigHeader(r.body, header(r, "X-CC-Webhook-Signature"), secret),
  square: (helper, r, signatureKey) =>
    helper.verifySignature({
      requestBody: r.body,
      signatureHeader: header(r, "x-square-hmacsha256-signature"),
      signatureKey,
      notificationUrl: r.url,
    }),
  linear: (Client, r, secret) => new Client(secret).verify(Buffer.from(r.body), header(r, "Linear-Signature")),
  elevenlabs: async (client, r, secret) => {
    await client.webhooks.constructEvent(r.body, header(r, "ElevenLabs-Signature"), secret);
    return true;
  },
  // Bolt judges the time against nowMilliseconds: the request's receipt.
  slack: (verifySlackRequest, r, signingSecret) => {
    verifySlackRequest({
      signingSecret,
      body: r.body,
      headers: {
        "x-slack-signature": header(r, "X-Slack-Signature"),
        "x-slack-request-timestamp": Number(header(r, "X-Slack-Request-Timestamp")),
      },
      nowMilliseconds: r.receivedAt,
    });
    return true;
  },
  discord: (sdk, r, publicKey) => sdk.verifyKey(r.body, header(r, "X-Signature-Ed25519"), header(r, "X-Signature-Timestamp"), publicKey),
};

// signers: (the provider's SDK, {secret, body, at}) → {header, body}.
const signers = {
  github: async (sdk, { secret, body }) => ({ header: { "X-Hub-Signature-256": await sdk.sign(secret, body) }, body }),
  workos: async (workos, { secret, body, at }) => {
    const sig = await workos.webhooks.computeSignature(at, JSON.parse(body), secret);
    return { header: { "WorkOS-Signature": `t=${at}, v1=${sig}` }, body };
  },
  mux: async (mux, { secret, body, at }) => {
    const t = Math.floor(at / 1000);
    const sig = await mux.webhooks.computeSignature(`${t}.${body}`, secret);
    return { header: { "Mux-Signature": `t=${t},v1=${sig}` }, body };
  },
  adyen: async (validator, { secret, body }) => {
    const notification = JSON.parse(body);
    for (const item of adyenItems(notification)) {
      item.additionalData = { ...item.additionalData, hmacSignature: validator.calculateHmac(item, secret) };
    }
    return { header: {}, body: JSON.stringify(notification) };
  },
  coinbase_commerce: async (webhook, { secret, body }) => ({
    header: { "X-CC-Webhook-Signature": webhook.computeSignature(body, secret) },
    body,
  }),
};

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

const [op, code] = process.argv.slice(2);
const table = { verify: verifiers, sign: signers }[op];
if (!table || !table[code]) {
  console.error(`usage: node sdk.mjs verify|sign CODE (verify: ${Object.keys(verifiers).join(", ")}; sign: ${Object.keys(signers).join(", ")})`);
  process.exit(2);
}
const input = await readStdin();
const sdk = await sdks[code]();
if (op === "sign") {
  process.stdout.write(JSON.stringify(await signers[code](sdk, input)));
} else {
  const out = [];
  for (const req of input.requests) {
    const r = { ...req, body: Buffer.from(req.body, "base64").toString("utf8") };
    try {
      const ok = await verifiers[code](sdk, r, input.secret);
      out.push({ ok: ok === true, why: ok === true ? "" : `returned ${ok}` });
    } catch (e) {
      out.push({ ok: false, why: String(e?.message ?? e) });
    }
  }
  process.stdout.write(JSON.stringify(out));
}
