// The harness's Node driver for ADK for TypeScript (@google/adk, pinned in
// package.json / package-lock.json).
//
// One long-lived process: it reads one JSON request per line on standard
// input and writes one JSON answer per line on standard output, nothing else
// (diagnostics go to standard error). A malformed request, or an exception
// that ADK-JS raises while a request runs, is an answer (`ok: false` with
// `error`, or `ok: true` with `exception`), never the end of the process.
//
// What it calls (all from the package's own exports, dist/esm/index.js):
//   * InMemorySessionService (dist/esm/sessions/in_memory_session_service.js):
//     createSession; getSession at every invocation start, as Runner.runAsync
//     does (dist/esm/runner/runner.js: it fetches a deep copy of the stored
//     session per run); appendEvent for every event, as the Runner appends
//     the user's message and every non-partial event the agent yields
//     (BaseSessionService.appendEvent replaces an event of the same id in
//     the invocation's session, pushes it otherwise, and pushes it to the
//     stored copy as well).
//   * LlmAgent with `contextCompactors: [compactor]` (dist/esm/agents/
//     llm_agent.js): its constructor inserts a ContextCompactorRequestProcessor
//     just before CONTENT_REQUEST_PROCESSOR. At every model call the driver
//     runs those two of the agent's request processors, in the agent's own
//     order, with a real InvocationContext (dist/esm/agents/
//     invocation_context.js) over the invocation's session: the compactor
//     processor (context_compactor_request_processor.js: the first compactor
//     whose shouldCompact is true compacts, plugin hooks run, and each event
//     the compaction added to session.events is yielded) and the content
//     processor (content_request_processor.js: getActiveEvents, then
//     getContents of content_processor_utils.js). The yielded events are
//     appended through the session service, as runOneStepAsync's yields reach
//     Runner.runAsync. The other request processors (instructions, tools,
//     auth, ...) do not touch session events and are not run.
//   * The compactors (dist/esm/context/): TokenBasedContextCompactor,
//     AnchoredContextCompactor, TruncatingContextCompactor,
//     TrajectoryThoughtPruningCompactor, AgentControlledContextCompactor, built
//     with the options the request gives, and ADK-JS's own LlmSummarizer
//     (context/summarizers/llm_summarizer.js: it makes the CompactedEvent,
//     startTime = first input's timestamp, endTime = last input's) over a
//     scripted BaseLlm. The harness's summariser only wraps it to record the
//     ids of the events it was given; the summary text is `summary#<n>` on
//     its first line, so the harness finds it in the prompt.
//
// Determinism: while a request runs, Date.now returns the request's clock
// (the `now` of the current action, in milliseconds), Math.random is a
// seeded generator (createNewEventId in dist/esm/events/event.js draws event
// ids from it), and globalThis.crypto.randomUUID a second one (randomUUID in
// dist/esm/utils/env_aware_utils.js calls it: invocation ids, `adk-` function
// call ids, session ids), so a request replays exactly; the second generator
// leaves the first's sequence, and so the event ids, as they were. Both are
// seeded from the request's "seed", which the harness makes a hash of the
// script's configuration (adk_js.script_seed), so the ids are a function of
// the script, not one sequence for every script.
//
// Request (one line):
//   {"id": any, "agent": "agent", "compactor": {"name": "token_based",
//    "options": {...}}, "summary": "tiny"|"large"|"grows", "seed": int, "base_chars": int,
//    "storage": "memory"|"database",                  // default memory; see sessionServiceFor
//    "entry": path|null,                              // the (patched) copy it runs on; see loadPackage
//    "actions": [
//      {"do": "invocation", "id": "e-1"},             // Runner.runAsync starts
//      {"do": "append", "event": {...ADK-JS event},   // appendEvent; with
//       "usage": "last_call"},                        // usage metadata from
//                                                     // the last prompt
//                                                     // (plus base_chars)
//      {"do": "model_call", "agent": "agent", "branch": null, "now": ms,
//       "state": {...}},                              // processors + contents
//    ]}
// Answer (one line):
//   {"id": ..., "ok": true, "events": {id: event JSON},
//    "calls": [{"action": k, "agent": ..., "before": [ids], "active": [ids], "after": [ids],
//               "active_after": [ids],
//               "stored_before": [ids], "stored_after": [ids],
//               "summaries": [{"input": [ids], "event": id}],
//               "contents": [[role, [part, ...]]], "baseline": [...],
//               "baseline_unclaimed": [...]}],
//    "stored": [ids], "exception": null | {"name", "message", "action"}}
// "active": the events the compactor's getActiveEvents keeps of "before"
// (the anchored compactor's own method, else context/compaction_utils.js);
// "active_after": what the same function keeps of "after";
// "baseline": the contents of the stored raw events (no compaction);
// "baseline_unclaimed" (only where the request appended compacted events):
// the same less the raw events those claim (stamped up to an endTime).
// A content part is ["text", text, event id] (["text", text] for a text no
// event holds: a summary's, another agent's relayed message; see
// namedTexts), ["call", id, name, event id] (["call", id, name] outside the
// named view) or
// ["response", id, name, event id]: ids come from the harness's tags (the
// `harness_call` / `harness_event` keys of args and responses), because
// getContents removes client-made `adk-` ids from what it sends the model
// (removeClientFunctionCallId).

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as readline from "node:readline";
import { pathToFileURL } from "node:url";

// Nothing but answers on stdout: ADK-JS's logger and any console output go to stderr.
for (const name of ["log", "info", "warn", "debug", "error", "trace"]) {
  console[name] = (...args) => process.stderr.write(args.map(String).join(" ") + "\n");
}

// Anything else that writes to stdout directly (the Runner's warnings) goes
// to stderr too; answers use the saved writer.
const writeAnswer = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);

const realNow = Date.now;
const realRandom = Math.random;
const realRandomUUID = globalThis.crypto.randomUUID;

// Which ADK-JS a request runs on: "entry" names a patched copy of the
// package's dist/esm/index.js with some of ADK-JS's fixes applied
// (fixes/index.json; the harness makes the copy,
// compaction_harness/sdk/js/js_fixes.py), null the package as installed; a
// request without "entry" runs on HARNESS_ADK_JS_ENTRY's copy, or the package
// as installed. One process serves every set of fixes: each copy is loaded
// once, on the first request that names it and before that request's seeded
// generators are installed (nothing a copy draws while it loads touches a
// request's ids); the copies share the package's dependencies, so a copy
// costs its own modules alone. ADK-JS tells its classes apart by
// Symbol.for markers (isBaseLlm, isLlmAgent, ...), not by instanceof, and
// the driver's own subclasses are made per copy (see loadPackage).
const ENTRY = process.env.HARNESS_ADK_JS_ENTRY || null;
const PACKAGES = new Map();
async function loadPackage(entry) {
  const key = entry ?? "";
  if (!PACKAGES.has(key)) {
    const href = entry ? pathToFileURL(entry).href : import.meta.resolve("@google/adk");
    const module = await import(href);
    // getActiveEvents (context/compaction_utils.js) is not among the package's
    // exports; the driver reads it from the same copy (patched or not) to
    // record the view a compactor had at each model call ("active" below).
    const utils = await import(new URL("./context/compaction_utils.js", href).href);
    PACKAGES.set(key, { adk: module, getActiveEvents: utils.getActiveEvents, ...modelsFor(module.BaseLlm) });
  }
  return PACKAGES.get(key);
}
let adk;
let getActiveEvents;
let ScriptedSummaryLlm;
let ScriptedTurnsLlm;
let AgentControlledContextCompactor;
let AnchoredContextCompactor;
let CONTENT_REQUEST_PROCESSOR;
let ContextCompactorRequestProcessor;
let DatabaseSessionService;
let FunctionTool;
let InMemoryRunner;
let InMemorySessionService;
let InvocationContext;
let LongRunningFunctionTool;
let LlmAgent;
let LlmSummarizer;
let PluginManager;
let TokenBasedContextCompactor;
let TrajectoryThoughtPruningCompactor;
let TruncatingContextCompactor;
let createEvent;
let isCompactedEvent;
// The request being served runs on `pkg` (requests are served one at a time).
function usePackage(pkg) {
  ({ adk, getActiveEvents, ScriptedSummaryLlm, ScriptedTurnsLlm } = pkg);
  ({
    AgentControlledContextCompactor,
    AnchoredContextCompactor,
    CONTENT_REQUEST_PROCESSOR,
    ContextCompactorRequestProcessor,
    DatabaseSessionService,
    FunctionTool,
    InMemoryRunner,
    InMemorySessionService,
    InvocationContext,
    LongRunningFunctionTool,
    LlmAgent,
    LlmSummarizer,
    PluginManager,
    TokenBasedContextCompactor,
    TrajectoryThoughtPruningCompactor,
    TruncatingContextCompactor,
    createEvent,
    isCompactedEvent,
  } = adk);
}
try {
  usePackage(await loadPackage(ENTRY));
} catch (error) {
  process.stderr.write(`adk-js driver: cannot load @google/adk${ENTRY ? ` (patched: ${ENTRY})` : ""}: ${error.message}\n`);
  process.exit(3);
}

// The driver's two scripted models, made for one copy of the package (they
// extend that copy's BaseLlm).
function modelsFor(BaseLlm) {
  // A scripted model for ADK-JS's LlmSummarizer: it answers with the text the
  // harness's summariser chose for this summary.
  const ScriptedSummaryLlm = class extends BaseLlm {
    constructor() {
      super({ model: "harness-scripted-summariser" });
      this.next = "";
    }
    async *generateContentAsync(_request, _stream) {
      yield { content: { role: "model", parts: [{ text: this.next }] } };
    }
    async connect() {
      throw new Error("the scripted summariser has no live connection");
    }
  };

  const ScriptedTurnsLlm = class extends BaseLlm {
    constructor(record, base) {
      super({ model: "harness-scripted-model" });
      this.turns = [];
      this.record = record;
      this.base = base;
    }
    async *generateContentAsync(request, _stream) {
      const turn = this.turns.shift();
      if (turn) this.record.results = { ...(this.record.runResults ?? {}), ...(turn.results ?? {}) };
      this.record.prompts.push({
        run: this.record.run,
        scripted: Boolean(turn),
        contents: contentsOf(request.contents),
      });
      const usage = turn?.usage
        ? { usageMetadata: { promptTokenCount: Math.floor((this.base + charsOf(request.contents)) / 4) } }
        : {};
      if (!turn) {
        yield { content: { role: "model", parts: [] } };
      } else {
        yield { content: { role: "model", parts: structuredClone(turn.parts ?? []) }, ...usage };
      }
    }
    async connect() {
      throw new Error("the scripted model has no live connection");
    }
  };
  return { ScriptedSummaryLlm, ScriptedTurnsLlm };
}

const COMPACTORS = {
  token_based: (o, s) => new TokenBasedContextCompactor({ ...o, summarizer: s }),
  anchored: (o, s) => new AnchoredContextCompactor({ ...o, summarizer: s }),
  truncating: (o) => new TruncatingContextCompactor(o),
  thought_pruning: (o) => new TrajectoryThoughtPruningCompactor(o),
  agent_controlled: (o, s) => new AgentControlledContextCompactor({ ...o, summarizer: s }),
};

// A uuid (version 4 layout) from the generator `random`.
function seededUUID(random) {
  return () => {
    const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16));
    hex[12] = "4";
    hex[16] = ((parseInt(hex[16], 16) & 3) | 8).toString(16);
    const h = hex.join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  };
}

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The harness's summariser: records the ids of the events it is given, then
// lets ADK-JS's own LlmSummarizer make the CompactedEvent.
class RecordingSummarizer {
  constructor(size, record, threshold) {
    this.size = size;
    this.record = record;
    // "large": larger than the token threshold by itself (four characters a
    // token, 40 over), as the google-adk drivers' summary_text sizes it.
    this.largeChars = 4 * (threshold || 1000) + 40;
    this.llm = new ScriptedSummaryLlm();
    this.inner = new LlmSummarizer({ llm: this.llm });
  }
  async summarize(events) {
    const number = this.record.count++;
    let text = `summary#${number}`;
    const given = events.reduce((n, e) => n + JSON.stringify(e.content ?? "").length, 0);
    if (this.size === "large") text += "\n" + "s".repeat(Math.max(0, this.largeChars - text.length - 1));
    else if (this.size === "grows") text += "\n" + "s".repeat(Math.floor(given / 2));
    this.llm.next = text;
    const entry = { input: events.map((e) => e.id), event: null, number };
    this.record.pending.push(entry);
    for (const e of events) this.record.seen(e);
    const made = await this.inner.summarize(events);
    entry.event = made.id;
    return made;
  }
}

function partsOf(content) {
  const out = [];
  for (const p of content?.parts ?? []) {
    if (p.functionCall) {
      const tag = p.functionCall.args?.harness_call;
      const call = ["call", p.functionCall.id ?? tag ?? "", p.functionCall.name ?? ""];
      // A call part names its event when it came from one (namedTexts).
      out.push(typeof p.harness_event === "string" ? [...call, p.harness_event] : call);
    } else if (p.functionResponse) {
      const r = p.functionResponse.response ?? {};
      out.push([
        "response",
        p.functionResponse.id ?? r.harness_call ?? "",
        p.functionResponse.name ?? "",
        String(r.harness_event ?? ""),
      ]);
    } else if (typeof p.text === "string") {
      // A text part names its event when it came from one (namedTexts);
      // ADK-JS's own texts (a summary, another agent's message relayed as
      // "For context:") name none.
      out.push(typeof p.harness_event === "string" ? ["text", p.text, p.harness_event] : ["text", p.text]);
    }
  }
  return out;
}

// P4 is checked by event identity: the session view the content processor
// reads at a model call, with copies of the events whose text and function
// call parts carry `harness_event` (the event's id), so that each text and
// call of the contents names the event it came from (partsOf), even when many
// events share one text, or one call id and tool (ids numbered per turn).
// getContents copies every part with cloneDeep (content_processor_utils.js),
// which keeps the property, and nothing there reads it. The stored events,
// the ones the compactors read and count, and the contents' sizes (charsOf)
// are untouched; compacted events and events without text are kept as they are.
function namedTexts(session) {
  const nameable = (p) => typeof p.text === "string" || p.functionCall;
  const named = (e) =>
    isCompactedEvent(e) || !(e.content?.parts ?? []).some(nameable)
      ? e
      : {
          ...e,
          content: {
            ...e.content,
            parts: e.content.parts.map((p) => (nameable(p) ? { ...p, harness_event: e.id } : p)),
          },
        };
  return { ...session, events: session.events.map(named) };
}

function charsOf(contents) {
  let total = 0;
  for (const content of contents ?? []) {
    for (const part of content?.parts ?? []) {
      if (part.text) total += part.text.length;
      if (part.functionCall) total += JSON.stringify(part.functionCall).length;
      if (part.functionResponse) total += JSON.stringify(part.functionResponse).length;
    }
  }
  return total;
}

function contentsOf(contents) {
  return (contents ?? []).map((c) => [c?.role ?? "", partsOf(c)]);
}

function eventJson(e) {
  const out = {
    id: e.id,
    invocationId: e.invocationId,
    author: e.author,
    timestamp: e.timestamp,
    branch: e.branch ?? null,
    content: e.content ?? null,
    longRunningToolIds: e.longRunningToolIds ?? [],
    requestedToolConfirmations: Object.keys(e.actions?.requestedToolConfirmations ?? {}),
    requestedAuthConfigs: Object.keys(e.actions?.requestedAuthConfigs ?? {}),
    usageMetadata: e.usageMetadata ?? null,
    isolationScope: e.isolationScope ?? null,
  };
  if (isCompactedEvent(e)) {
    out.isCompacted = true;
    out.startTime = e.startTime;
    out.endTime = e.endTime;
    out.compactedContent = e.compactedContent ?? "";
    out.isScratchpad = e.isScratchpad === true;
  }
  return out;
}

async function contentsFor(session, agent, invocationId, branch, pluginManager, service) {
  const ctx = new InvocationContext({
    session: namedTexts(session),
    agent,
    invocationId,
    branch: branch ?? undefined,
    pluginManager,
    sessionService: service,
  });
  const request = { contents: [], toolsDict: {}, liveConnectConfig: {} };
  for await (const _ of CONTENT_REQUEST_PROCESSOR.runAsync(ctx, request)) {
    // the content processor yields nothing
  }
  return request.contents;
}

async function run(request) {
  const actions = request.actions;
  if (!Array.isArray(actions)) throw new TypeError("request.actions: expected a list");
  const spec = request.compactor ?? {};
  const make = COMPACTORS[spec.name];
  if (!make) {
    throw new TypeError(
      `request.compactor.name: unknown compactor ${JSON.stringify(spec.name)} ` +
        `(known: ${Object.keys(COMPACTORS).join(", ")})`,
    );
  }
  const service = await sessionServiceFor(request);
  return await runOn(service, request, actions, make, spec);
}

// The session service of a request: "storage": "memory" (default,
// InMemorySessionService) or "database": DatabaseSessionService
// (dist/esm/sessions/database_session_service.js, MikroORM) on a SQLite file
// in a temporary folder. Every "invocation" action reloads the session with
// getSession, so with "database" each invocation reads the stored events
// back from SQLite, as a server handling each request afresh does.
//
// One DatabaseSessionService serves every "database" request of this process
// (one per package: a fixed package has its own class): opening MikroORM and
// creating the schema cost most of a database script, so the first request
// opens it and each later one starts from emptied tables (DELETE of every
// row, the schema version kept), as a fresh file would hold them. SQLite
// numbers the rows of an emptied table from 1 again, so ties break as on a
// fresh file. The folder is removed when the process exits.
const DATABASES = new Map();
// A signal ends the process through exit, so the folders go too.
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(1));
const EMPTIED = ["events", "sessions", "user_states", "app_states"];

async function sessionServiceFor(request) {
  const storage = request.storage ?? "memory";
  if (storage === "memory") return new InMemorySessionService();
  if (storage !== "database") {
    throw new TypeError(
      `request.storage: expected "memory" or "database", got ${JSON.stringify(storage)}`,
    );
  }
  const kept = DATABASES.get(DatabaseSessionService);
  if (kept) {
    const connection = kept.orm.em.getConnection();
    for (const table of EMPTIED) await connection.execute(`DELETE FROM ${table}`);
    return kept;
  }
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "adk-js-driver-"));
  process.on("exit", () => fs.rmSync(folder, { recursive: true, force: true }));
  const service = new DatabaseSessionService(`sqlite://${path.join(folder, "session.db")}`);
  await service.init();
  // Durability off, as on the harness's database servers: a crash loses
  // nothing a script needs, and a synchronous write to disk per statement
  // cost two thirds of a database script. What is stored, and in which
  // order it is read back, is the same.
  const connection = service.orm.em.getConnection();
  await connection.execute("PRAGMA synchronous = OFF");
  await connection.execute("PRAGMA journal_mode = MEMORY");
  DATABASES.set(DatabaseSessionService, service);
  return service;
}

async function runOn(service, request, actions, make, spec) {
  const events = {};
  const record = { count: 0, pending: [], seen: (e) => (events[e.id] = eventJson(e)) };
  const summarizer = new RecordingSummarizer(request.summary ?? "tiny", record, request.compactor?.options?.tokenThreshold);
  const agents = new Map();
  const compactors = new Map();
  const agentFor = (name) => {
    if (!agents.has(name)) {
      const compactor = make(spec.options ?? {}, summarizer);
      compactors.set(name, compactor);
      agents.set(
        name,
        new LlmAgent({ name, model: new ScriptedSummaryLlm(), contextCompactors: [compactor] }),
      );
    }
    return agents.get(name);
  };
  const pluginManager = new PluginManager();
  const appName = "harness", userId = "user";
  const created = await service.createSession({ appName, userId, sessionId: "s" });
  let session = created;
  let invocationId = "";
  const stored = async () => (await service.getSession({ appName, userId, sessionId: "s" })).events;
  const calls = [];
  // Compacted events the harness appended (a client's records, an older
  // session's): not made by ADK-JS's compaction in this run ("baseline_unclaimed").
  const foreign = new Set();
  let lastChars = 0;
  for (let k = 0; k < actions.length; k++) {
    const action = actions[k];
    try {
      if (action.do === "invocation") {
        session = await service.getSession({ appName, userId, sessionId: "s" });
        invocationId = action.id ?? "";
      } else if (action.do === "append") {
        const event = createEvent(action.event);
        if (isCompactedEvent(event)) foreign.add(event.id);
        if (action.usage === "last_call") {
          // The token model: the prompt the last model call sent, counted as
          // estimatePromptTokenCount (token_based_context_compactor.js)
          // counts characters, plus the request's base characters (system
          // instruction, tool declarations), at four characters a token.
          const base = Number.isInteger(request.base_chars) ? request.base_chars : 0;
          event.usageMetadata = { promptTokenCount: Math.floor((base + lastChars) / 4) };
        }
        record.seen(event);
        await service.appendEvent({ session, event });
      } else if (action.do === "model_call") {
        if (typeof action.now === "number") Date.now = () => action.now;
        Object.assign(session.state, action.state ?? {});
        const agent = agentFor(action.agent ?? request.agent ?? "agent");
        const ctx = new InvocationContext({
          session,
          agent,
          invocationId,
          branch: action.branch ?? undefined,
          pluginManager,
          sessionService: service,
        });
        const call = {
          action: k,
          agent: agent.name,
          branch: action.branch ?? null,
          before: session.events.map((e) => e.id),
          stored_before: (await stored()).map((e) => e.id),
          summaries: [],
        };
        // The compactor's own view before it runs: the anchored compactor's
        // getActiveEvents method, else the shared getActiveEvents.
        const compactor = compactors.get(agent.name);
        call.active = (
          typeof compactor.getActiveEvents === "function"
            ? compactor.getActiveEvents(session.events)
            : getActiveEvents(session.events)
        ).map((e) => e.id);
        calls.push(call);
        const processor = agent.requestProcessors.find(
          (p) => p instanceof ContextCompactorRequestProcessor,
        );
        const llmRequest = { contents: [], toolsDict: {}, liveConnectConfig: {} };
        for (const p of agent.requestProcessors) {
          if (p !== processor && p !== CONTENT_REQUEST_PROCESSOR) continue;
          // The content processor reads the session through namedTexts (a
          // view made after compaction, so it holds what compaction left).
          const on =
            p === CONTENT_REQUEST_PROCESSOR
              ? new InvocationContext({
                  session: namedTexts(session),
                  agent,
                  invocationId,
                  branch: action.branch ?? undefined,
                  pluginManager,
                  sessionService: service,
                })
              : ctx;
          for await (const yielded of p.runAsync(on, llmRequest)) {
            record.seen(yielded);
            await service.appendEvent({ session, event: yielded });
          }
        }
        call.summaries = record.pending.splice(0);
        for (const e of session.events) record.seen(e);
        call.after = session.events.map((e) => e.id);
        // The compactor's view once it has run ("active_after"): what the
        // next call's view is compared with (an event a client's record
        // brings back into view is new to the prompt, as a stored one is).
        call.active_after = (
          typeof compactor.getActiveEvents === "function"
            ? compactor.getActiveEvents(session.events)
            : getActiveEvents(session.events)
        ).map((e) => e.id);
        const storedNow = await stored();
        call.stored_after = storedNow.map((e) => e.id);
        call.contents = contentsOf(llmRequest.contents);
        lastChars = charsOf(llmRequest.contents);
        // The hypothetical prompt may raise where ADK-JS's real one did not
        // (another event is the newest): then it is null, with the reason,
        // and never an exception of the run.
        const hypothetical = async (events) => {
          try {
            return contentsOf(
              await contentsFor(
                { ...session, events }, agent, invocationId, action.branch, pluginManager, service,
              ),
            );
          } catch (error) {
            call.hypothetical_errors = [...(call.hypothetical_errors ?? []), String(error?.message)];
            return null;
          }
        };
        call.baseline = await hypothetical(storedNow.filter((e) => !isCompactedEvent(e)));
        // Where the request appended compacted events of its own (a client's
        // records, an older session's): the contents of the raw events none
        // of them claims, read as ADK-JS's getActiveEvents reads one (every
        // event stamped up to its endTime), the prompt of the session as its
        // writers left it. What the prompt builder drops because of what a
        // record hides (the events between a call and an answer the record
        // leaves newest in view: the latest-response rearrangement) is the
        // record's doing, not a loss by compaction (P4).
        const records = storedNow.filter((e) => foreign.has(e.id));
        if (records.length > 0) {
          const claimedUntil = Math.max(...records.map((e) => e.endTime));
          call.baseline_unclaimed = await hypothetical(
            storedNow.filter((e) => !isCompactedEvent(e) && !(e.timestamp <= claimedUntil)),
          );
        }
      } else {
        throw new TypeError(`actions[${k}].do: unknown action ${JSON.stringify(action.do)}`);
      }
    } catch (error) {
      if (error instanceof TypeError && String(error.message).startsWith("actions[")) throw error;
      const storedNow = await stored();
      for (const e of storedNow) record.seen(e);
      const last = calls[calls.length - 1];
      if (last && last.action === k) {
        // What the call had done when ADK-JS raised (no contents: none were built).
        last.summaries = record.pending.splice(0);
        for (const e of session.events) record.seen(e);
        last.after = session.events.map((e) => e.id);
        last.stored_after = storedNow.map((e) => e.id);
      }
      return {
        ok: true,
        events,
        calls,
        stored: storedNow.map((e) => e.id),
        exception: {
          name: error?.name ?? "Error",
          message: String(error?.message ?? error),
          action: k,
        },
      };
    }
  }
  const storedNow = await stored();
  for (const e of storedNow) record.seen(e);
  return { ok: true, events, calls, stored: storedNow.map((e) => e.id), exception: null };
}

// -- runner mode --------------------------------------------------------------
// Request {"mode": "runner", "compactor", "summary", "seed", "start": ms,
//          "step": ms, "runs": [{"message": Content, "gap": ms,
//          "results": {call id: response object},   // before the first turn:
//                                                   // a tool ADK-JS re-runs
//          "resolve": {response id: k},             // the k-th framework request
//          "turns": [{"parts": [Part], "usage": bool,
//                     "results": {call id: response object}}]}]}
// runs each run through ADK-JS's own InMemoryRunner (runner/in_memory_runner.js,
// Runner.runAsync in runner/runner.js) with an LlmAgent whose model replays
// the run's turns in order (a turn is one model response with the parts
// given: a text, or parallel functionCall parts with their ids; with
// "usage": true it carries
// usageMetadata.promptTokenCount = (base_chars + the prompt's characters) / 4,
// the emulating mode's token model), the tools "lookup"
// (FunctionTool: answers at once with the last turn's results[id]) and
// "export" (LongRunningFunctionTool: results[id] as its interim result, or
// no result: undefined), and the same
// compactor and recording summariser as the emulating mode. When a run has
// no turn left the model answers with an empty content (the Runner calls the
// model after every message; the script may have no turn there): ADK-JS
// stores no event for it, and that prompt is reported with "scripted": false.
// Clock: Date.now starts at "start" plus the run's "gap" and advances by
// "step" at every read, so timestamps are distinct and in call order.
// Answer: {"ok": true, "events": {id: event JSON}, "stored": [ids],
//          "prompts": [{"run": k, "contents": [...]}], "exception": ...}.
// A run's "resolve": {id: k} names function responses of the run's message
// that answer the k-th framework request (adk_request_confirmation /
// adk_request_credential call, in stored order) of the session: ADK-JS draws
// those calls' ids itself (generateClientFunctionCallId), so the message
// gets the id the Runner stored.
const REQUESTS = new Set(["adk_request_confirmation", "adk_request_credential"]);
async function resolveRequests(run, storedEvents) {
  const resolve = run.resolve ?? {};
  if (Object.keys(resolve).length === 0) return run.message;
  const requests = [];
  for (const e of storedEvents) {
    for (const p of e.content?.parts ?? []) {
      if (p.functionCall && REQUESTS.has(p.functionCall.name)) requests.push(p.functionCall.id);
    }
  }
  const message = structuredClone(run.message);
  for (const p of message?.parts ?? []) {
    const k = p.functionResponse ? resolve[p.functionResponse.id] : undefined;
    if (k === undefined) continue;
    if (!Number.isInteger(k) || k < 0 || k >= requests.length) {
      throw new TypeError(`run.resolve: no framework request number ${JSON.stringify(k)}`);
    }
    p.functionResponse.id = requests[k];
  }
  return message;
}

async function runWithRunner(request) {
  if (!Array.isArray(request.runs)) throw new TypeError("request.runs: expected a list");
  const spec = request.compactor ?? {};
  const make = COMPACTORS[spec.name];
  if (!make) throw new TypeError(`request.compactor.name: unknown compactor ${JSON.stringify(spec.name)}`);
  const events = {};
  const record = { count: 0, pending: [], seen: (e) => (events[e.id] = eventJson(e)), prompts: [], run: -1 };
  const summarizer = new RecordingSummarizer(request.summary ?? "tiny", record, request.compactor?.options?.tokenThreshold);
  const model = new ScriptedTurnsLlm(
    record,
    Number.isInteger(request.base_chars) ? request.base_chars : 0,
  );
  const results = (id) => record.results?.[id];
  const lookup = new FunctionTool({
    name: "lookup",
    description: "harness plain tool",
    execute: (args) => structuredClone(results(args?.harness_call) ?? { result: "" }),
  });
  const exportTool = new LongRunningFunctionTool({
    name: "export",
    description: "harness long-running tool",
    execute: (args) =>
      results(args?.harness_call) === undefined ? undefined : structuredClone(results(args.harness_call)),
  });
  // "transfer": FunctionTool({requireConfirmation: true}) (tools/function_tool.js
  // asks through toolContext.requestConfirmation; once the user confirmed,
  // REQUEST_CONFIRMATION_LLM_REQUEST_PROCESSOR runs it again and it answers
  // with results[id]); "calendar": a tool that asks for credentials with
  // toolContext.requestCredential (agents/context.js) while
  // toolContext.getAuthResponse finds none (answering with results[id], the
  // placeholder), and answers with results[id] once AUTH_PREPROCESSOR
  // (auth/auth_preprocessor.js) stored the user's credential and re-ran it.
  const confirm = new FunctionTool({
    name: "transfer",
    description: "harness tool that needs the user's confirmation",
    requireConfirmation: true,
    execute: (args) => structuredClone(results(args?.harness_call) ?? { result: "" }),
  });
  const AUTH_CONFIG = {
    authScheme: { type: "http", scheme: "bearer" },
    credentialKey: "harness_calendar",
  };
  const authed = new FunctionTool({
    name: "calendar",
    description: "harness tool that needs credentials",
    execute: (args, toolContext) => {
      const done = results(args?.harness_call);
      if (toolContext.getAuthResponse(AUTH_CONFIG) === undefined) {
        toolContext.requestCredential(structuredClone(AUTH_CONFIG));
      }
      return structuredClone(done ?? { pending: "credentials requested" });
    },
  });
  const agent = new LlmAgent({
    name: request.agent ?? "agent",
    model,
    tools: [lookup, exportTool, confirm, authed],
    contextCompactors: [make(spec.options ?? {}, summarizer)],
  });
  const runner = new InMemoryRunner({ agent, appName: "harness" });
  const service = runner.sessionService;
  await service.createSession({ appName: "harness", userId: "user", sessionId: "s" });
  let clock = Number(request.start ?? 0);
  const step = Number(request.step ?? 1);
  const stored = async () => (await service.getSession({ appName: "harness", userId: "user", sessionId: "s" })).events;
  for (let k = 0; k < request.runs.length; k++) {
    const run = request.runs[k];
    record.run = k;
    clock += Number(run.gap ?? 0);
    Date.now = () => (clock += step);
    model.turns = [...(run.turns ?? [])];
    record.runResults = run.results ?? {};
    record.results = { ...record.runResults };
    try {
      const message = await resolveRequests(run, await stored());
      for await (const _ of runner.runAsync({ userId: "user", sessionId: "s", newMessage: message })) {
        // the Runner appends every non-partial event itself
      }
    } catch (error) {
      const now = await stored();
      for (const e of now) record.seen(e);
      return {
        ok: true, events, stored: now.map((e) => e.id), prompts: record.prompts,
        exception: { name: error?.name ?? "Error", message: String(error?.message ?? error), action: k },
      };
    }
  }
  const now = await stored();
  for (const e of now) record.seen(e);
  return { ok: true, events, stored: now.map((e) => e.id), prompts: record.prompts, exception: null };
}

function answer(obj) {
  writeAnswer(JSON.stringify(obj) + "\n");
}

const lines = readline.createInterface({ input: process.stdin, terminal: false });
for await (const line of lines) {
  if (!line.trim()) continue;
  let request;
  try {
    request = JSON.parse(line);
    if (typeof request !== "object" || request === null || Array.isArray(request)) {
      throw new TypeError("expected a JSON object");
    }
  } catch (error) {
    answer({ id: null, ok: false, error: `malformed request: ${error.message}` });
    continue;
  }
  try {
    const entry = Object.hasOwn(request, "entry") ? request.entry : ENTRY;
    if (entry !== null && typeof entry !== "string") throw new TypeError("expected a path or null");
    usePackage(await loadPackage(entry));
  } catch (error) {
    answer({ id: request.id ?? null, ok: false, error: `request.entry: cannot load @google/adk: ${error.message}` });
    continue;
  }
  const seed = Number.isInteger(request.seed) ? request.seed : 0;
  Math.random = mulberry32(seed);
  globalThis.crypto.randomUUID = seededUUID(mulberry32(seed ^ 0x5eed));
  try {
    answer({
      id: request.id ?? null,
      ...(await (request.mode === "runner" ? runWithRunner(request) : run(request))),
    });
  } catch (error) {
    answer({ id: request.id ?? null, ok: false, error: `${error?.name}: ${error?.message}` });
  } finally {
    Date.now = realNow;
    Math.random = realRandom;
    globalThis.crypto.randomUUID = realRandomUUID;
  }
}
// Standard input closed (the harness is done with this process): exit, which
// removes the database folders (sessionServiceFor) whatever handle is open.
process.exit(0);
