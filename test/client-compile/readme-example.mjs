var _a, _b;
import http from 'node:http';
import { createLeadIntakeClient, verifyWebhook, WebhookVerificationError } from 'lead-intake-api/client';
var baseUrl = (_a = process.env.LEAD_INTAKE_URL) !== null && _a !== void 0 ? _a : 'http://127.0.0.1:3000';
var apiKey = process.env.LEAD_INTAKE_API_KEY; // key.token from `cli demo`
var secret = process.env.LEAD_INTAKE_WEBHOOK_SECRET; // signing_secret from `cli workflow create`
var receiverPort = Number((_b = process.env.RECEIVER_PORT) !== null && _b !== void 0 ? _b : 4000);
// 1. A receiver for the workflow's deliveries: verify the raw body before trusting it.
var events = [];
var receiver = http.createServer(function (request, response) {
    var chunks = [];
    request.on('data', function (chunk) { return chunks.push(chunk); });
    request.on('end', function () {
        try {
            events.push(verifyWebhook(secret, request.headers, Buffer.concat(chunks)));
            response.writeHead(204).end();
        }
        catch (error) {
            if (!(error instanceof WebhookVerificationError))
                throw error;
            console.warn("refused a delivery (".concat(error.reason, "): ").concat(error.message));
            response.writeHead(401).end();
        }
    });
});
await new Promise(function (resolve) { return receiver.listen(receiverPort, '127.0.0.1', resolve); });
// 2. The client: every result is { ok: true, status, data } or { ok: false, status, error }.
var client = createLeadIntakeClient({ baseUrl: baseUrl, apiKey: apiKey });
var me = await client.me();
if (!me.ok)
    throw new Error("GET /me: ".concat(me.error.error, ": ").concat(me.error.message));
console.log("workspace \"".concat(me.data.data.workspace.name, "\", ").concat(me.data.data.rate_limit.requests_per_minute, " requests a minute"));
// 3. One lead; a failure narrows on its error code.
var created = await client.createLead({
    name: 'Ada Lovelace',
    email: "ada.".concat(Date.now(), "@analytical-engines.example"),
    tags: ['Conference 2026'],
    on_duplicate: 'error',
});
var newLeads = 0;
if (created.ok) {
    console.log("lead ".concat(created.data.data.id, " ").concat(created.data.meta.status, " (HTTP ").concat(created.status, ")"));
    if (created.data.meta.status === 'created')
        newLeads++;
}
else {
    switch (created.error.error) {
        case 'validation_failed':
            console.error('invalid lead:', created.error.errors);
            break;
        case 'duplicate_lead':
            console.log("already known as lead ".concat(created.error.lead_id, " (matched on ").concat(created.error.matched_on, ")"));
            break;
        default:
            throw new Error("POST /leads: ".concat(created.error.error, ": ").concat(created.error.message));
    }
}
// 4. Any number of rows: batches of 100, one result per row in this order.
var rows = Array.from({ length: 250 }, function (_, n) { return ({ name: "Imported Person ".concat(n), email: "person".concat(n, "@import.example") }); });
var imported = await client.createLeads(rows, { enrich: false });
console.log('import:', imported.meta);
for (var _i = 0, _c = imported.rows; _i < _c.length; _i++) {
    var row = _c[_i];
    if (row.status === 'failed')
        console.warn("row ".concat(row.index, " failed on ").concat(row.field, ": ").concat(row.error));
    if (row.status === 'not_processed')
        console.warn("row ".concat(row.index, " not processed: ").concat(row.reason.error), row.errors);
}
newLeads += imported.meta.created;
// 5. Every new lead fires the workflow: wait for its signed deliveries (30 s at most).
var deadline = Date.now() + 30000;
while (events.length < newLeads && Date.now() < deadline)
    await new Promise(function (resolve) { return setTimeout(resolve, 200); });
console.log("verified ".concat(events.length, " of ").concat(newLeads, " deliveries; first:"), events[0]);
receiver.close();
if (events.length < newLeads)
    process.exitCode = 1;
