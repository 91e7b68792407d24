// chit serve's page: the log's latest checkpoint, search, each entry drawn
// for a person, and a file checked through /v1/verify. With the reader's
// key or policy, the checkpoint and each entry's inclusion are checked in
// the browser (verify.js), shown apart from what the server claims. Everything a receipt
// holds is written as text (textContent, SVG text nodes), never as markup,
// so a receipt cannot put HTML, links or scripts on this page.
'use strict';

const $ = (sel) => document.querySelector(sel);
const SVG_NS = 'http://www.w3.org/2000/svg';

/** An element with attributes and children; strings become text nodes. */
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  setAttrs(e, attrs);
  append(e, kids);
  return e;
}

function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG_NS, tag);
  setAttrs(e, attrs);
  append(e, kids);
  return e;
}

function setAttrs(e, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.setAttribute('class', v);
    else if (k === 'text') e.textContent = String(v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, String(v));
  }
}

function append(e, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : String(k));
  }
}

/**
 * A number whose text JSON.parse would change (an integer beyond 2^53, a
 * decimal with more digits than a double holds): kept as written, so the
 * page shows 9007199254740993 where the receipt says so.
 */
class Exact {
  constructor(src) { this.src = src; }
  toString() { return this.src; }
}

/** JSON, numbers as written where a double would change them. */
function parseExact(text) {
  return JSON.parse(text, (_k, v, ctx) =>
    (typeof v === 'number' && ctx && typeof ctx.source === 'string' && String(v) !== ctx.source) ? new Exact(ctx.source) : v);
}

/** JSON text of a parsed value, Exact numbers as written; `step` indents. */
function stringify(v, step, ind = '') {
  if (v instanceof Exact) return v.src;
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  const nl = step ? `\n${ind}${step}` : '';
  const end = step ? `\n${ind}` : '';
  if (Array.isArray(v)) return v.length ? `[${v.map((x) => nl + stringify(x, step, ind + step)).join(',')}${end}]` : '[]';
  const keys = Object.keys(v);
  const sep = step ? ': ' : ':';
  return keys.length ? `{${keys.map((k) => nl + JSON.stringify(k) + sep + stringify(v[k], step, ind + step)).join(',')}${end}}` : '{}';
}

/** A number to compute with (an Exact one as near as a double comes). */
function num(v) {
  return v instanceof Exact ? Number(v.src) : v;
}

/** A value as a person reads it: strings as they are, others as JSON. */
function show(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  return stringify(v, '');
}

function badge(text, tone) {
  return el('span', { class: `badge ${tone}`, text });
}

function facts(pairs) {
  const dl = el('dl', { class: 'facts' });
  for (const [k, v] of pairs) {
    if (v === undefined) continue;
    dl.append(el('dt', { text: k }), el('dd', {}, v instanceof Node ? v : show(v)));
  }
  return dl;
}

function table(headers, rows) {
  return el('table', {},
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', { text: h })))),
    el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c) => (c instanceof Node && c.tagName === 'TD') ? c : el('td', {}, c instanceof Node ? c : show(c)))))));
}

// ---------------------------------------------------------------- the API

async function getJSON(url) {
  const r = await fetch(url, { headers: { accept: 'application/json' } });
  const text = await r.text();
  let v;
  try { v = JSON.parse(text); } catch (_) { throw new Error(`${url} answered ${r.status}, not JSON`); }
  if (!r.ok) throw new Error(v && v.error ? v.error : `${url} answered ${r.status}`);
  return v;
}

/** The verdict /v1/verify gives for some bytes (200 valid, 422 invalid, 400 unreadable). */
async function verify(bytes) {
  const r = await fetch('/v1/verify', { method: 'POST', body: bytes, headers: { 'content-type': 'application/json' } });
  const text = await r.text();
  try { return JSON.parse(text); } catch (_) { return { status: 'unreadable', error: `the server answered ${r.status}` }; }
}

// ---------------------------------------------------------------- reading entries

function b64Bytes(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function b64urlBytes(s) {
  let t = s.replace(/-/g, '+').replace(/_/g, '/');
  while (t.length % 4) t += '=';
  return b64Bytes(t);
}

const utf8 = new TextDecoder('utf-8');

/** An entry's bytes, read: the JSON, and inside a DSSE envelope its payload. */
function readEntry(bytes) {
  const e = { bytes, text: utf8.decode(bytes), json: null, envelope: null, statement: null, doc: null, kind: null };
  try { e.json = parseExact(e.text); } catch (_) { return e; }
  let doc = e.json;
  if (doc && typeof doc === 'object' && typeof doc.payload === 'string' && Array.isArray(doc.signatures)) {
    e.envelope = doc;
    try { doc = parseExact(utf8.decode(b64urlBytes(doc.payload))); } catch (_) { doc = null; }
    // A Treeship receipt statement wraps the document: {kind, payload, ...}.
    if (doc && typeof doc === 'object' && typeof doc.kind === 'string' && doc.payload && typeof doc.payload === 'object') {
      e.statement = doc;
      doc = doc.payload;
    }
  }
  e.doc = doc;
  e.kind = kindOf(doc, e.statement);
  return e;
}

function kindOf(d, statement) {
  if (statement) return statement.kind;
  if (!d || typeof d !== 'object') return null;
  if ('receiptVersion' in d) return 'run-receipt';
  if (d.signed_body && typeof d.signed_body === 'object' && d.signed_body.receipt_type === 'numeric.lineage') return 'numeric.lineage';
  if (d.schema === 'zerker.reason.authorization-bundle.v1' || d.schema === 'zerker.reason.authorization.v1') return 'zerker.reason.authorization.v1';
  if (typeof d.schema === 'string') return d.schema;
  return null;
}

/** The header in which the server gives an entry's content address. */
const CONTENT_ADDRESS = 'chit-content-address';

/** Entry `which` (an index or sha256:HEX), fetched and read; `address`
 * is its content address as the server gives it. */
async function fetchEntry(which) {
  const r = await fetch(`/v1/entries/${encodeURIComponent(which)}`, { headers: { accept: 'application/json' } });
  const text = await r.text();
  let bundle;
  try { bundle = JSON.parse(text); } catch (_) { throw new Error(`the server answered ${r.status}, not JSON`); }
  if (!r.ok) throw new Error(bundle && bundle.error ? bundle.error : `the server answered ${r.status}`);
  const e = readEntry(b64Bytes(bundle.entry));
  e.index = bundle.index;
  e.bundle = bundle;
  e.address = r.headers.get(CONTENT_ADDRESS);
  return e;
}

// ---------------------------------------------------------------- the checkpoint

async function loadCheckpoint() {
  try {
    const r = await fetch('/checkpoint');
    const note = await r.text();
    if (!r.ok) throw new Error(note);
    const [origin, size, root] = note.split('\n');
    $('#checkpoint').textContent = note;
    $('#checkpoint').removeAttribute('aria-busy');
    $('#origin').textContent = origin;
    $('#size').textContent = `${Number(size).toLocaleString('en')} entries`;
    $('#size').dataset.size = size;
    $('#checkpoint').title = `root ${root}`;
    await showCheckpointCheck(note);
  } catch (err) {
    $('#checkpoint').textContent = `cannot read the checkpoint: ${err.message}`;
  }
}

// ---------------------------------------------------------------- checked by this browser

const TRUST_KEY = 'chit-trust-policy';
/** The reader's policy, read (null: none given). */
let trust = null;
let trustError = null;

async function loadTrust(text) {
  trust = null;
  trustError = null;
  if (!text || !text.trim()) return;
  try { trust = await chitVerify.readPolicy(text); } catch (err) { trustError = err.message; }
}

/** Which key and policy the page holds the log to, in words. */
function showTrust() {
  const out = $('#policy-shown');
  const why = chitVerify.cannot();
  if (why) { out.replaceChildren(el('p', { class: 'error-box', text: `This browser cannot verify: ${why}` })); return; }
  if (trustError) { out.replaceChildren(el('p', { class: 'error-box', text: `Not used: ${trustError}` })); return; }
  if (!trust) { out.replaceChildren(el('p', { text: 'No key given: nothing is verified by this browser.' })); return; }
  const d = chitVerify.describe(trust);
  out.replaceChildren(facts([
    ['log', d.logs],
    ['witnesses', d.witnesses.length ? d.witnesses.join('; ') : 'none'],
    ['quorum', d.quorum],
  ]));
}

function mark(ok) {
  return ok === true ? badge('VERIFIED BY THIS BROWSER', 'ok')
    : ok === false ? badge('NOT VERIFIED', 'bad') : badge('NOT CHECKED', 'neutral');
}

/** A checkpoint's check, as lines: the log's signature, each
 * cosignature, the quorum. */
function checkpointLines(c) {
  const lines = [];
  if (c.log) lines.push(`signed by the log's key ${c.log.key.hash}${c.log.ok ? '' : ': the signature does not verify'}`);
  for (const x of c.witnesses) {
    const when = x.time !== undefined ? ` at ${new Date(Number(x.time) * 1000).toISOString()}` : '';
    lines.push(`${x.w.label} (${x.w.name})${x.ok === true ? ` cosigned it${when}` : `: ${x.why}`}`);
  }
  if (c.log && c.log.ok) lines.push(c.quorum ? 'the policy\'s quorum is met' : 'the policy\'s quorum is not met');
  return lines;
}

/** The check block for a checkpoint: `data-verified` is yes, no or none. */
function checkBlock(name, ok, summary, lines) {
  return el('div', { class: 'check', 'data-check': name, 'data-verified': ok === true ? 'yes' : ok === false ? 'no' : 'none' },
    el('div', { class: 'title' }, mark(ok), el('span', { text: summary })),
    lines.length ? el('ul', {}, lines.map((l) => el('li', { text: l }))) : null);
}

async function showCheckpointCheck(note) {
  const box = $('#checkpoint-check');
  const why = chitVerify.cannot();
  let block;
  if (why) {
    block = checkBlock('checkpoint', null, `This browser cannot verify it: ${why}`, []);
  } else if (!trust) {
    block = checkBlock('checkpoint', null, 'Not checked: give the log\'s key or policy below.', []);
  } else {
    try {
      const c = await chitVerify.checkpoint(note, trust);
      block = checkBlock('checkpoint', c.ok, c.ok ? 'This checkpoint is signed and cosigned as your policy says.' : `This checkpoint is not verified: ${c.why}.`, checkpointLines(c));
    } catch (err) {
      block = checkBlock('checkpoint', false, `This checkpoint is not verified: ${err.message}.`, []);
    }
  }
  box.replaceChildren(block);
  box.dataset.verified = block.dataset.verified;
}

/** What this browser checked of an entry's bundle, apart from the
 * server's claims. */
async function entryCheck(e, which) {
  const box = el('div', { class: 'browser-check', 'data-done': '0' });
  const why = chitVerify.cannot();
  box.append(el('h3', { text: 'Checked by this browser' }));
  if (why) {
    box.append(checkBlock('inclusion', null, `This browser cannot verify this entry: ${why}`, []));
  } else if (!trust) {
    box.append(checkBlock('inclusion', null, 'Not checked: give the log\'s key or policy ("Verify in this browser").', []));
  } else {
    // The address the entry was asked for, or the one the server names.
    const address = /^sha256:/.test(which) ? which : e.address;
    let r;
    try {
      r = await chitVerify.bundle(e.bundle, trust, address);
    } catch (err) {
      box.append(checkBlock('inclusion', false, `Entry ${e.index} is not verified: ${err.message}.`, []));
      box.dataset.done = '1';
      return box;
    }
    const c = r.checkpoint;
    box.append(checkBlock('checkpoint', c.ok, c.ok
      ? `Its checkpoint (${c.origin}, ${c.size} entries) is signed and cosigned as your policy says.`
      : `Its checkpoint is not verified: ${c.why}.`, checkpointLines(c)));
    const cosigned = c.witnesses.length ? c.witnesses.every((x) => x.ok === true) : null;
    box.append(checkBlock('cosignatures', c.log && c.log.ok ? (c.witnesses.some((x) => x.ok === false) ? false : cosigned) : null,
      c.witnesses.length ? `${c.witnesses.filter((x) => x.ok === true).length} of ${c.witnesses.length} cosignatures by your policy's witnesses verify.` : 'No cosignature by your policy\'s witnesses.', []));
    box.append(checkBlock('inclusion', r.inclusion.ok, r.inclusion.ok
      ? `Entry ${e.index} is in the log: the SHA-256 of its bytes and its inclusion proof give the verified checkpoint's root.`
      : `Entry ${e.index} is not verified in the log: ${r.inclusion.why}.`,
      r.inclusion.ok ? [`the SHA-256 of its bytes: ${r.entrySha256}`, `under root ${c.rootText}`] : []));
  }
  box.dataset.done = '1';
  return box;
}

// ---------------------------------------------------------------- search

let lastQuery = null;
let nextAfter = null;

function queryFromForm() {
  const q = {};
  for (const [k, v] of new FormData($('#search'))) if (String(v).trim()) q[k] = String(v).trim();
  return q;
}

async function runSearch(query, more) {
  const list = $('#hits');
  if (!more) { list.replaceChildren(); nextAfter = null; }
  lastQuery = query;
  const q = new URLSearchParams(query);
  q.set('limit', '100');
  if (more && nextAfter !== null) q.set('after', String(nextAfter));
  try {
    const r = await getJSON(`/v1/search?${q}`);
    for (const h of r.hits) {
      list.append(el('li', {}, el('a', { href: `#/entry/${h.index}`, 'data-index': h.index },
        el('span', { class: 'idx', text: h.index }),
        el('span', { class: 'kind', text: h.kind || 'unknown kind' }),
        el('span', { class: 'muted', text: h.stream_id || h.art_id || '' }))));
    }
    nextAfter = r.next;
    $('#more').hidden = r.next === null || r.next === undefined;
    const n = list.children.length;
    $('#hits-summary').textContent = n === 0 ? 'No entries match.' : `${n} entr${n === 1 ? 'y' : 'ies'}${$('#more').hidden ? '' : ' so far'}.`;
    markCurrent();
  } catch (err) {
    $('#hits-summary').textContent = `Search failed: ${err.message}`;
  }
}

function markCurrent() {
  const m = location.hash.match(/^#\/entry\/(.+)$/);
  for (const a of document.querySelectorAll('#hits a')) a.classList.toggle('current', !!m && a.dataset.index === m[1]);
}

// ---------------------------------------------------------------- verdicts

function verdictBlock(v) {
  const tone = v.status === 'valid' ? 'ok' : v.status === 'invalid' ? 'bad' : 'warn';
  const box = el('div', { class: 'verdict', 'data-status': v.status || 'unreadable' },
    el('div', { class: 'title' }, badge((v.status || 'unreadable').toUpperCase(), tone),
      v.kind ? el('span', { class: 'mono', text: v.kind }) : null));
  if (v.error) box.append(el('p', { class: 'error-box', text: v.error }));
  const items = [];
  for (const f of v.errors || []) items.push(el('li', { class: 'error' }, el('span', { class: 'rule', text: f.rule }), f.message, f.path ? el('code', { text: ` ${f.path}` }) : null));
  for (const f of v.warnings || []) items.push(el('li', { class: 'warning' }, el('span', { class: 'rule', text: f.rule }), f.message, f.path ? el('code', { text: ` ${f.path}` }) : null));
  if (items.length) box.append(el('ul', { class: 'findings' }, items));
  return box;
}

// ---------------------------------------------------------------- kinds

const GRADE_TONE = { verified: 'ok', partial: 'warn', reviewed: 'warn', 'not-visible': 'warn', unverified: 'neutral', failed: 'bad' };
const STANCE_TONE = { agreed: 'ok', objected: 'bad', silent: 'warn', unavailable: 'neutral' };

function drawRunReceipt(d) {
  const out = el('div', { class: 'kind-run-receipt' });
  out.append(el('div', { class: 'title' }, el('h2', { text: d.id || 'run receipt' }),
    badge(show(d.grade), GRADE_TONE[d.grade] || 'neutral')));
  const v = d.verdict || {};
  out.append(facts([
    ['producer', d.producer ? `${show(d.producer.name)} ${show(d.producer.version)}` : undefined],
    ['ended', d.endedAt], ['revision', d.revision],
    ['verdict', v.outcome !== undefined ? `${show(v.outcome)}: ${show(v.agreed)} of ${show(v.reviewers)} reviewers agreed` : undefined],
    ['tokens', d.tokens], ['cost (USD)', d.costUsd],
    ['receipt digest', d.digest === undefined ? undefined : el('span', {}, show(d.digest),
      el('span', { class: 'muted', text: ' (the receipt\'s own, over its canonical form: not the log\'s content address)' }))],
  ]));
  if (Array.isArray(d.seats)) {
    out.append(el('h3', { text: `Seats (${d.seats.length})` }), table(['seat', 'role', 'model', 'stance', 'turns', 'errors', 'timeouts'],
      d.seats.map((s) => [s.name, s.role, s.model, s.stance ? badge(s.stance, STANCE_TONE[s.stance] || 'neutral') : '—', s.turns, s.errors, s.timeouts])));
  }
  if (Array.isArray(d.checks)) {
    out.append(el('h3', { text: `Checks (${d.checks.length})` }), table(['check', 'by', 'where', 'state', 'exit', 'result'],
      d.checks.map((c) => [
        el('span', {}, c.purpose ? el('div', { text: c.purpose }) : null, el('code', { text: show(c.command) })),
        c.by, c.where, c.state,
        c.exitCode === null || c.exitCode === undefined ? badge('none', 'neutral') : badge(String(c.exitCode), c.exitCode === 0 ? 'ok' : 'bad'),
        c.result])));
  }
  if (Array.isArray(d.gaps) && d.gaps.length) {
    out.append(el('h3', { text: 'Gaps' }), el('ul', { class: 'gaps' }, d.gaps.map((g) => el('li', { text: show(g) }))));
  }
  return out;
}

/** One packet, and its stream drawn from every packet of it in the log. */
async function drawPacket(e) {
  const d = e.doc || {};
  const out = el('div', { class: 'kind-packet' });
  out.append(el('div', { class: 'title' }, el('h2', { text: `${show(d.stream_id)} #${show(d.sequence)}` }),
    badge(show(d.reproducibility), d.reproducibility === 'bit_exact' ? 'ok' : 'neutral')));
  out.append(facts([
    ['packet id', d.packet_id], ['previous', d.prev_packet_id], ['produced', d.produced_at],
    ['input', d.input_digest], ['model', d.model_digest], ['output', d.output_digest],
    ['signed by', e.envelope ? (e.envelope.signatures || []).map((s) => s.keyid).join(', ') : 'not signed'],
  ]));
  if (typeof d.stream_id !== 'string') return out;
  out.append(el('h3', { text: 'Its stream in this log' }));
  const row = el('div', { class: 'stream', 'data-stream': d.stream_id }, el('span', { class: 'muted', text: 'reading the stream…' }));
  out.append(row);
  // The log's own stream table: each packet's sequence, ids and entry,
  // one request, no entry read.
  const s = await getJSON(`/v1/streams/${encodeURIComponent(d.stream_id)}`);
  row.replaceChildren(...streamRow(s.packets, e.index));
  out.append(el('div', { class: 'legend' },
    el('span', {}, badge('n', 'ok'), ' a packet'),
    el('span', {}, badge('n', 'bad'), ' a gap, or a sequence number held by two packets'),
    el('span', {}, el('span', { class: 'badge bad', text: '━' }), ' a link that does not name the packet before')));
  return out;
}

/** The boxes and links of a stream (the packets /v1/streams gives): every
 * sequence number from 0 to the highest. */
function streamRow(packets, here) {
  const bySeq = new Map();
  for (const p of packets) {
    const list = bySeq.get(p.sequence) || [];
    list.push(p);
    bySeq.set(p.sequence, list);
  }
  // At most 2,000 boxes: a stream longer than that is drawn to its 2,000th.
  const top = Math.min(Math.max(-1, ...bySeq.keys()), 1999);
  const parts = [];
  let before = null;
  for (let s = 0; s <= top; s++) {
    const at = bySeq.get(s);
    if (s > 0) {
      const linked = at && before && at.some((p) => before.some((b) => p.prev_packet_id === b.packet_id));
      parts.push(el('span', { class: linked ? 'link' : 'link broken', title: linked ? 'linked' : 'not linked to the packet before' }));
    }
    if (!at) {
      parts.push(el('span', { class: 'seq gap', title: `sequence ${s} is missing`, text: s }));
    } else {
      const replaced = at.length > 1;
      const cls = ['seq'];
      if (replaced) cls.push('replaced');
      if (at.some((p) => p.index === here)) cls.push('here');
      parts.push(el('a', { class: cls.join(' '), href: `#/entry/${at[0].index}`,
        title: replaced ? `sequence ${s} is held by entries ${at.map((p) => p.index).join(', ')}` : `entry ${at[0].index}: ${at[0].packet_id}`,
        text: s }));
    }
    before = at || null;
  }
  return parts;
}

const CLASS_TONE = { occupancy_invariant: 'ok', occupancy_coupled: 'bad', indeterminate: 'warn' };
const CLASS_WORDS = {
  occupancy_invariant: 'The output did not change with the induced concurrency beyond the bound.',
  occupancy_coupled: 'The output changed with the induced concurrency beyond the bound.',
  indeterminate: 'The concurrency was not induced as asked, or a level has too few repetitions: the measurement cannot tell.',
};

function drawLineage(d) {
  const b = d.signed_body || {};
  const dv = b.divergence || {};
  const bound = b.bound_ref || {};
  const out = el('div', { class: 'kind-lineage' });
  out.append(el('div', { class: 'title' }, el('h2', { text: show(b.lineage_id) }),
    badge(show(dv.class), CLASS_TONE[dv.class] || 'neutral')));
  if (CLASS_WORDS[dv.class]) out.append(el('p', { class: 'class-words', text: `${dv.class}: ${CLASS_WORDS[dv.class]}` }));
  out.append(facts([
    ['model (declared)', b.endpoint_ref && b.endpoint_ref.declared_model_name], ['measured', b.measured_at],
    ['requests', b.request_set && b.request_set.request_count], ['signed by', d.key_id], ['receipt id', d.receipt_id],
  ]));
  const levels = Array.isArray(b.levels) ? b.levels.filter((l) => l && typeof l === 'object') : [];
  const pairs = levelPairs(levels, dv);
  out.append(el('h3', { text: 'What was measured, against the bound' }));
  out.append(el('p', { class: 'muted', text: `Each level sent the same requests at a higher induced concurrency; level ${levels.length ? show(levels[0].level_index) : 0} is the baseline the others are compared with. Dashed red: the bound, fixed before the first request was sent (committed ${show(bound.committed_at)}).` }));
  const top = Math.max(1, ...pairs.map((p) => p.compared || 0), num(dv.compared_position_count) || 0);
  const pairPoints = (value, none) => pairs.map((p) => {
    const v = value(p);
    const tip = `level ${show(p.level.level_index)} against the baseline: ${p.source}`;
    if (p.differing === null) return { i: p.i, y: null, cls: 'unknown', label: '?', title: `${tip}; the receipt gives no figures for it` };
    if (v === null) return { i: p.i, y: null, cls: 'none', label: none, title: tip };
    return { i: p.i, y: v, cls: p.reported ? 'measured reported' : 'measured derived', label: String(v), title: `${tip}: ${v}` };
  });
  out.append(el('div', { class: 'plots' },
    levelPlot({
      name: 'differing', title: 'Differing positions, each level against the baseline', yLabel: 'positions', levels, yMax: top,
      points: pairPoints((p) => p.differing, '0'),
      bound: Number.isFinite(num(bound.max_differing_positions)) ? { y: num(bound.max_differing_positions), text: `at most ${show(bound.max_differing_positions)} differing` } : null,
    }),
    levelPlot({
      name: 'first', title: 'First divergent position, each level against the baseline', yLabel: 'position', levels, yMax: top,
      points: pairPoints((p) => p.first, 'none'),
      bound: Number.isFinite(num(bound.min_first_divergent_index)) ? { y: num(bound.min_first_divergent_index), text: `no divergence before position ${show(bound.min_first_divergent_index)}` } : null,
    }),
    levelPlot({
      name: 'distinct', title: 'Distinct sequences among the repetitions at each level', yLabel: 'sequences', levels,
      yMax: Math.max(1, ...levels.map((l) => Math.max(Number(num(l.distinct_sequence_count)) || 0, Number(num(l.repetitions)) || 0))),
      points: levels.map((l, i) => ({ i, y: Number(num(l.distinct_sequence_count)) || 0, cls: 'level', label: show(l.distinct_sequence_count),
        title: `level ${show(l.level_index)}: concurrency ${show(l.induced_concurrency)}, ${show(l.distinct_sequence_count)} distinct over ${show(l.repetitions)} repetitions` })),
      bound: Number.isFinite(num(bound.max_distinct_sequences_per_level)) ? { y: num(bound.max_distinct_sequences_per_level), text: `at most ${show(bound.max_distinct_sequences_per_level)} distinct` } : null,
    })));
  out.append(el('div', { class: 'legend' },
    el('span', {}, el('span', { class: 'dot reported' }), ' as the receipt reports it (the pair with the most differing positions)'),
    el('span', {}, el('span', { class: 'dot derived' }), ' a level whose sequence digest is the baseline\'s or the reported level\'s: the same sequences, so the same comparison'),
    el('span', {}, el('b', { text: '?' }), ' not reported')));
  out.append(table(['level', 'concurrency', 'in flight (accept / complete)', 'repetitions', 'distinct sequences', 'same sequences as', 'tokens'],
    levels.map((l, i) => {
      const same = levels.findIndex((k) => typeof k.sequence_digest_sha256 === 'string' && k.sequence_digest_sha256 === l.sequence_digest_sha256);
      return [l.level_index, l.induced_concurrency, `${show(l.observed_in_flight_at_accept)} / ${show(l.observed_in_flight_at_complete)}`,
        l.repetitions, l.distinct_sequence_count, same >= 0 && same < i ? `level ${show(levels[same].level_index)}` : '—', l.emitted_token_count];
    })));
  if (Number.isInteger(num(dv.compared_position_count))) {
    out.append(el('h3', { text: `Compared pair: level ${show(dv.pair_low_level_index)} against level ${show(dv.pair_high_level_index)}` }));
    out.append(el('p', {}, `${show(dv.differing_position_count)} of ${show(dv.compared_position_count)} positions differ`,
      Number.isInteger(num(dv.first_divergent_index)) && num(dv.differing_position_count) > 0 ? `, the first at position ${dv.first_divergent_index}.` : '.'));
    out.append(positionsStrip(dv));
  }
  if (b.effect && typeof b.effect === 'object') {
    out.append(el('h3', { text: 'Effect' }), el('p', { class: 'effect', text: effectWords(b.effect) }),
      el('p', { class: 'muted', text: 'The effect follows from the class alone (the lineage specification, section 5); chit recomputes it rather than take it from the receipt (L10).' }),
      el('details', {}, el('summary', { text: 'the effect\'s fields' }), facts(Object.entries(b.effect))));
  }
  return out;
}

/** Each pair (baseline, level) from the second level on, with its figures
 * where the receipt gives them: the reported pair's as it reports them; a
 * level whose sequence digest is the baseline's has the same sequences
 * (nothing differs), one whose digest is the reported level's has that
 * level's sequences (the same comparison); any other, none. */
function levelPairs(levels, dv) {
  if (!levels.length) return [];
  const base = levels[0];
  const high = levels.find((l) => l.level_index === dv.pair_high_level_index);
  const reported = !!high && dv.pair_low_level_index === base.level_index && Number.isInteger(num(dv.differing_position_count));
  const first = Number.isInteger(num(dv.first_divergent_index)) ? num(dv.first_divergent_index) : null;
  const asReported = { differing: num(dv.differing_position_count), first, compared: num(dv.compared_position_count) };
  const digest = (l) => (typeof l.sequence_digest_sha256 === 'string' ? l.sequence_digest_sha256 : null);
  return levels.slice(1).map((l, k) => {
    const p = { i: k + 1, level: l };
    if (reported && l === high) return { ...p, ...asReported, reported: true, source: 'as the receipt reports it' };
    if (digest(l) !== null && digest(l) === digest(base)) return { ...p, differing: 0, first: null, compared: null, source: `the same sequences as level ${show(base.level_index)}` };
    if (reported && digest(l) !== null && digest(l) === digest(high)) return { ...p, ...asReported, source: `the same sequences as level ${show(high.level_index)}` };
    return { ...p, differing: null, first: null, compared: null, source: 'not reported' };
  });
}

/** One plot over the levels, under its title: x the induced concurrency
 * (log scale), y 0..yMax; `points` [{i (a level's place), y (null:
 * `label` alone), cls, label, title}]; `bound` {y, text} a dashed red
 * line, its text under the title. */
function levelPlot({ name, title, yLabel, levels, yMax, points, bound }) {
  const W = 340, H = 190, L = 46, R = 14, T = 18, B = 38;
  const xs = levels.map((l) => Math.log2(Math.max(1, Number(num(l.induced_concurrency)) || 1)));
  const xMax = Math.max(1, ...xs);
  const top = Math.max(1, yMax, bound ? bound.y : 0);
  const X = (x) => L + (x / xMax) * (W - L - R);
  const Y = (y) => H - B - (Math.min(y, top) / top) * (H - T - B);
  const plot = svg('svg', { class: `plot ${name}`, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': bound ? `${title}; ${bound.text}` : title });
  plot.append(svg('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#8c959f' }), svg('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#8c959f' }));
  for (const y of [...new Set([0, Math.round(top / 2), top])]) {
    plot.append(svg('text', { x: L - 6, y: Y(y) + 4, 'text-anchor': 'end' }, String(y)));
  }
  levels.forEach((l, i) => plot.append(svg('text', { x: X(xs[i]), y: H - B + 15, 'text-anchor': 'middle' }, show(l.induced_concurrency))));
  plot.append(svg('text', { x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle' }, 'induced concurrency'));
  plot.append(svg('text', { x: 12, y: (T + H - B) / 2, 'text-anchor': 'middle', transform: `rotate(-90 12 ${(T + H - B) / 2})` }, yLabel));
  const known = points.filter((p) => p.y !== null);
  if (known.length > 1) {
    plot.append(svg('polyline', { points: known.map((p) => `${X(xs[p.i])},${Y(p.y)}`).join(' '), fill: 'none', stroke: '#0969da', 'stroke-width': 2 }));
  }
  // Over the line joining the points, so that it shows where they lie on it.
  if (bound && Number.isFinite(bound.y)) {
    plot.append(svg('line', { class: 'bound', x1: L, y1: Y(bound.y), x2: W - R, y2: Y(bound.y), stroke: '#cf222e', 'stroke-width': 1.5, 'stroke-dasharray': '5 4' }));
  }
  for (const p of points) {
    const x = X(xs[p.i]);
    const y = p.y === null ? H - B - 10 : Y(p.y);
    const derived = /derived/.test(p.cls);
    if (p.y !== null) {
      plot.append(svg('circle', { class: `point ${p.cls}`, cx: x, cy: y, r: 5, fill: derived ? '#fff' : '#0969da', stroke: '#0969da', 'stroke-width': 2,
        'data-level': show(levels[p.i].level_index), 'data-value': p.y }, svg('title', {}, p.title)));
    }
    plot.append(svg('text', { class: `value ${p.cls}`, x, y: y - 9, 'text-anchor': 'middle', 'data-level': show(levels[p.i].level_index) }, p.label,
      svg('title', {}, p.title)));
  }
  return el('figure', { class: `plot-figure ${name}` },
    el('figcaption', {}, el('span', { class: 'plot-title', text: title }),
      bound ? el('span', { class: 'bound-label', text: `dashed: the bound, ${bound.text}` }) : null),
    plot);
}

/** A lineage effect as a sentence from its fields (the receipt's words,
 * not recomputed here). */
function effectWords(e) {
  const says = [];
  const n = num(e.refused_request_count);
  const requests = `${show(e.refused_request_count)} request${n === 1 ? '' : 's'}`;
  if (e.serving_set_action === 'removed') says.push('The endpoint was removed from the serving set.');
  else if (e.serving_set_action === 'retained') says.push('The endpoint stays in the serving set.');
  else says.push(`What happened to the endpoint in the serving set: ${show(e.serving_set_action)}.`);
  if (e.settlement_action === 'refused') says.push(`Settlement was refused for ${requests}.`);
  else if (e.settlement_action === 'authorized') says.push(n > 0 ? `Settlement was authorized, with ${requests} refused.` : 'Settlement was authorized.');
  else says.push(`Settlement: ${show(e.settlement_action)}.`);
  if (typeof e.reroute_target_commitment === 'string') {
    says.push(`Its requests go instead to another endpoint (commitment ${e.reroute_target_commitment.slice(0, 12)}…), which ${e.reroute_target_batch_invariant_declared === true ? 'declares' : 'does not declare'} that its output does not depend on the batch.`);
  } else if (e.serving_set_action === 'removed') {
    says.push('No other endpoint was named to take its requests.');
  }
  if (e.effected_at !== undefined) says.push(`In effect from ${show(e.effected_at)}.`);
  return says.join(' ');
}

/** The compared positions as a strip: the first divergent one red, those after it (where the rest differ) amber. */
function positionsStrip(dv) {
  const n = Math.min(num(dv.compared_position_count), 2048);
  const strip = el('div', { class: 'positions', 'aria-label': 'compared positions' });
  const differs = num(dv.differing_position_count) > 0;
  const first = num(dv.first_divergent_index);
  for (let i = 0; i < n; i++) {
    const cls = !differs ? '' : i === first ? 'first' : i > first ? 'after' : '';
    strip.append(el('span', { class: cls, title: `position ${i}` }));
  }
  return el('div', {}, strip, differs ? el('div', { class: 'legend' },
    el('span', {}, el('span', { class: 'badge bad', text: ' ' }), ' the first divergent position'),
    el('span', {}, el('span', { class: 'badge warn', text: ' ' }), ` after it, where the other ${num(dv.differing_position_count) - 1} differing positions lie (the receipt gives their count, not each place)`)) : null);
}

async function drawLattice(e) {
  const d = e.doc || {};
  const out = el('div', { class: 'kind-lattice' });
  out.append(el('div', { class: 'title' }, el('h2', { text: `${show(d.packet_id)} (${show(d.todo_id)})` }),
    badge(`epoch ${show(d.plan_epoch)}`, 'neutral')));
  out.append(facts([
    ['packet digest', d.packet_digest], ['context content digest', d.context_content_digest],
    ['plan', d.plan_ref], ['task', d.task_ref], ['base', d.base_sha],
    ['paths', d.scope && d.scope.paths], ['verifiers', d.verifier_refs], ['forbidden operations', d.forbidden_operations],
  ]));
  out.append(el('h3', { text: `Rebinds of ${show(d.todo_id)} in this log` }));
  const holder = el('div', { class: 'rebinds' }, el('span', { class: 'muted', text: 'reading the packets…' }));
  out.append(holder);
  // The server answers as chit-core's X6 reads the log's packets of this
  // todo: their order, and what X6 finds against the packet before each.
  let rb;
  try {
    rb = await getJSON(`/v1/rebinds?todo_id=${encodeURIComponent(show(d.todo_id))}`);
  } catch (err) {
    holder.replaceChildren(el('p', { class: 'muted', text: `The rebinds could not be read: ${err.message}` }));
    return out;
  }
  const same = rb.packets || [];
  const partial = rb.complete ? null : el('p', { class: 'muted', text: 'Only the first 5,000 executor packets of the log were read: this todo may have more.' });
  if (same.length < 2) {
    holder.replaceChildren();
    append(holder, [el('p', { class: 'muted', text: 'Only this packet: no rebind to draw.' }), partial]);
    return out;
  }
  const rows = same.map((m) => {
    const f = new Set(m.flagged || []);
    return [
      el('a', { href: `#/entry/${m.index}`, text: m.index }),
      el('td', { class: m.valid ? '' : 'changed' }, show(m.packet_id)),
      el('td', { class: f.has('/plan_epoch') ? 'changed' : '' }, show(m.plan_epoch)),
      el('td', { class: f.has('/plan_ref') ? 'changed' : '' }, show(m.plan_ref)),
      el('td', { class: f.has('/context_content_digest') ? 'changed mono' : 'mono' }, show(m.context_content_digest)),
      el('td', { class: 'mono' }, show(m.packet_digest)),
    ];
  });
  const t = table(['entry', 'packet', 'epoch', 'plan', 'context content digest', 'packet digest'], rows);
  t.classList.add('chain');
  const found = (rb.findings || []).map((x) => el('li', {}, el('code', { text: x.rule }), ` ${x.message}`));
  holder.replaceChildren();
  append(holder, [t,
    el('p', { class: 'muted', text: 'Red: what X6 finds against the packet before it (a rebind keeps the content, names a new plan, raises the epoch), or a packet not valid on its own.' }),
    found.length ? el('ul', { class: 'findings' }, ...found) : el('p', { text: 'X6: every rebind holds.' }),
    partial]);
  return out;
}

const STATUS_TONE = { authorized: 'ok', denied: 'bad', conflicted: 'bad', insufficient_evidence: 'warn' };

function drawReason(d) {
  const cert = d.certificate || d;
  const out = el('div', { class: 'kind-reason' });
  out.append(el('div', { class: 'title' }, el('h2', { text: `${show(cert.action && cert.action.tool)} under ${show(cert.mission && cert.mission.id)}` }),
    badge(show(cert.status), STATUS_TONE[cert.status] || 'neutral')));
  const r = cert.reasoning || {};
  out.append(facts([
    ['action', cert.action && cert.action.id], ['arguments', cert.action && cert.action.arguments],
    ['reasoning', r.status], ['query', r.query ? atom(r.query) : undefined],
    ['request digest', cert.request_digest], ['the request', d.request ? 'in this bundle' : 'not given'],
  ]));
  if (Array.isArray(cert.issues) && cert.issues.length) {
    out.append(el('h3', { text: 'Issues' }), el('p', { class: 'issues-note', text: issuesNote(cert.status) }),
      el('ul', { class: 'findings' }, cert.issues.map((i) => el('li', { class: 'warning' }, el('span', { class: 'rule', text: show(i.code) }), show(i.message)))));
  }
  const proof = r.proof;
  if (proof && Array.isArray(proof.nodes)) {
    out.append(el('h3', { text: `Proof (${proof.nodes.length} nodes)` }));
    const byId = new Map(proof.nodes.map((n) => [n.id, n]));
    out.append(el('ul', { class: 'tree' }, proofNode(byId, proof.root, new Set(), 0)));
  }
  return out;
}

/** What a certificate's issues mean beside its status. */
function issuesNote(status) {
  const setAside = 'an issue names a fact the reasoning set aside (an authority the policy does not admit for that predicate, a time window closed at the evaluation time, a fact superseded by a later one)';
  if (status === 'authorized') {
    return `Authorized, and yet issues: ${setAside}. The certificate authorizes the action by the proof below, built from the facts that were counted; the issues say what was not counted. With the request at hand chit re-runs the reasoning and replays the proof (A8, A9): the verdict above says whether they hold.`;
  }
  return `The first issue says why the status is ${show(status)}; any after it: ${setAside}.`;
}

function atom(a) {
  if (!a || typeof a !== 'object') return show(a);
  return `${show(a.predicate)}(${(Array.isArray(a.arguments) ? a.arguments : []).map(show).join(', ')})`;
}

function proofNode(byId, id, path, depth) {
  const n = byId.get(id);
  if (!n) return el('li', { class: 'error-box', text: `${show(id)}: not among the proof's nodes` });
  if (path.has(id) || depth > 64) return el('li', { class: 'error-box', text: `${show(id)}: a cycle` });
  const tone = n.kind === 'fact' ? 'neutral' : 'ok';
  const label = el('span', {}, el('span', { class: `badge nk ${tone}`, text: show(n.kind) }), el('span', { class: 'atom', text: atom(n.atom) }),
    n.authority ? el('span', { class: 'muted', text: `  ${show(n.authority)}` }) : null,
    n.kind !== 'fact' && n.source_id ? el('span', { class: 'muted', text: `  by ${show(n.source_id)}` }) : null);
  const premises = Array.isArray(n.premises) ? n.premises : [];
  if (!premises.length) return el('li', {}, label);
  const next = new Set(path).add(id);
  return el('li', {}, el('details', { open: true }, el('summary', {}, label),
    el('ul', {}, premises.map((p) => proofNode(byId, p, next, depth + 1)))));
}

/** An entry (or a file) drawn by its kind, with the verdict beside it. */
async function drawEntry(e, verdict, heading, address, checked) {
  const box = el('div', { class: 'entry', 'data-kind': e.kind || 'unknown' });
  if (heading) box.append(el('p', { class: 'muted' }, heading));
  if (address) box.append(address);
  if (checked) box.append(checked);
  if (checked && verdict) box.append(el('h3', { text: 'The server\'s verdict (its claim: not checked by this browser)' }));
  if (verdict) box.append(verdictBlock(verdict));
  let drawn;
  try {
    switch (e.kind) {
      case 'run-receipt': drawn = drawRunReceipt(e.doc); break;
      case 'verification.packet.v1': drawn = await drawPacket(e); break;
      case 'numeric.lineage': drawn = drawLineage(e.doc); break;
      case 'lattice.executor_packet.v1': drawn = await drawLattice(e); break;
      case 'zerker.reason.authorization.v1': drawn = drawReason(e.doc); break;
      default: drawn = el('p', { class: 'muted', text: e.json ? `${e.kind || 'This kind'} is shown as its JSON below.` : 'Not JSON: shown as text below.' });
    }
  } catch (err) {
    drawn = el('p', { class: 'error-box', text: `cannot draw this entry: ${err.message}` });
  }
  box.append(drawn);
  const raw = e.statement ? stringify(e.statement, '  ') : e.json ? stringify(e.json, '  ') : e.text;
  box.append(el('details', {}, el('summary', { text: e.envelope ? 'the signed statement' : 'the entry as JSON' }), el('pre', { text: raw })));
  return box;
}

/** Whose the main pane is: each entry opened or file checked takes a
 * turn, and draws only while the turn is still its own (a slow answer
 * does not cover a later one). */
let paneTurn = 0;

async function openEntry(which) {
  const pane = $('#entry');
  const turn = ++paneTurn;
  pane.replaceChildren(el('p', { class: 'muted', text: `reading entry ${which}…` }));
  try {
    const e = await fetchEntry(which);
    const [verdict, checked] = await Promise.all([verify(e.bytes), entryCheck(e, which)]);
    if (turn !== paneTurn) return;
    const heading = el('span', {}, `Entry ${e.index} of ${show(e.bundle.origin)}, `, el('a', { href: `/v1/entries/${e.index}`, text: 'its bundle' }),
      ' (', el('code', { text: `chit verify --log-key KEY` }), ' proves it offline)');
    const address = e.address ? el('p', { class: 'address' }, 'Content address ',
      el('a', { class: 'content-address mono', href: `#/entry/${e.address}`, text: e.address }),
      el('span', { class: 'muted', text: ': the SHA-256 of the entry\'s exact bytes, which the Entry box and /v1/entries/sha256:HEX find it by.' })) : null;
    const drawn = await drawEntry(e, verdict, heading, address, checked);
    if (turn !== paneTurn) return;
    pane.replaceChildren(drawn);
  } catch (err) {
    if (turn !== paneTurn) return;
    pane.replaceChildren(el('p', { class: 'error-box', text: `Entry ${which}: ${err.message}` }));
  }
  pane.dataset.entry = which;
  markCurrent();
}

// ---------------------------------------------------------------- a file of one's own

/** Most lines of a JSON Lines file the page checks. */
const MAX_FILE_LINES = 1000;

async function checkFile(file) {
  const out = $('#verdict');
  const pane = $('#entry');
  const turn = ++paneTurn;
  out.replaceChildren(el('p', { class: 'muted', text: `checking ${file.name}…` }));
  // The main pane is this file's from now on: no earlier verdict stays.
  pane.replaceChildren(el('p', { class: 'muted', text: `checking ${file.name}…` }));
  pane.dataset.entry = '';
  const bytes = new Uint8Array(await file.arrayBuffer());
  if (/\.(jsonl|ndjson)$/i.test(file.name)) {
    await checkLines(file.name, utf8.decode(bytes), turn);
    return;
  }
  const verdict = await verify(bytes);
  const drawn = await drawEntry(readEntry(bytes), verdict, `${file.name}, checked here and not appended`);
  if (turn !== paneTurn) return;
  out.replaceChildren(el('p', { class: 'summary', text: `${file.name}: ${verdict.status}` }), verdictBlock(verdict));
  pane.replaceChildren(drawn);
}

/** A JSON Lines file: each line checked through /v1/verify, the count in
 * the side pane, each line's verdict in the main one (its receipt drawn
 * when opened). Line numbers are the file's, blank lines skipped. */
async function checkLines(name, text, turn) {
  const lines = text.split('\n').map((t, i) => ({ n: i + 1, t: t.replace(/\r$/, '') })).filter((l) => l.t.trim());
  const checked = lines.slice(0, MAX_FILE_LINES);
  const results = [];
  for (const l of checked) {
    const bytes = new TextEncoder().encode(l.t);
    results.push({ line: l.n, bytes, verdict: await verify(bytes) });
    if (turn !== paneTurn) return;
  }
  const n = (s) => results.filter((r) => (r.verdict.status || 'unreadable') === s).length;
  const summary = `${name}: ${results.length} line${results.length === 1 ? '' : 's'}, ${n('valid')} valid, ${n('invalid')} invalid, ${n('unreadable')} unreadable`;
  const cut = lines.length > checked.length ? `Only the first ${MAX_FILE_LINES.toLocaleString('en')} of its ${lines.length.toLocaleString('en')} lines were checked.` : null;
  $('#verdict').replaceChildren(...[el('p', { class: 'summary', text: summary }), cut ? el('p', { class: 'muted', text: cut }) : null].filter(Boolean));
  const box = el('div', { class: 'entry file-lines', 'data-kind': 'json-lines' },
    el('p', { class: 'muted', text: `${name}, checked here line by line and not appended` }),
    el('div', { class: 'title' }, el('h2', { text: name }),
      badge(`${n('valid')} valid`, 'ok'), badge(`${n('invalid')} invalid`, n('invalid') ? 'bad' : 'neutral'),
      badge(`${n('unreadable')} unreadable`, n('unreadable') ? 'warn' : 'neutral')),
    cut ? el('p', { class: 'muted', text: cut }) : null);
  const list = el('ol', { class: 'lines' });
  for (const r of results) {
    const drawing = el('div', { class: 'line-drawing' });
    const more = el('details', {}, el('summary', { text: `the receipt on line ${r.line}` }), drawing);
    more.addEventListener('toggle', async () => {
      if (!more.open || drawing.dataset.drawn) return;
      drawing.dataset.drawn = '1';
      drawing.replaceChildren(await drawEntry(readEntry(r.bytes), null, null));
    });
    list.append(el('li', { class: 'line', 'data-line': r.line, 'data-status': r.verdict.status || 'unreadable' },
      el('h3', { text: `line ${r.line}` }), verdictBlock(r.verdict), more));
  }
  box.append(list);
  $('#entry').replaceChildren(box);
}

// ---------------------------------------------------------------- wiring

/** The page explained, in the main pane. */
function showAbout() {
  paneTurn++;
  const pane = $('#entry');
  pane.replaceChildren($('#about').content.cloneNode(true));
  pane.dataset.entry = '';
  markCurrent();
}

function route() {
  const m = location.hash.match(/^#\/entry\/(.+)$/);
  if (m) openEntry(decodeURIComponent(m[1]));
  else showAbout();
}

document.addEventListener('DOMContentLoaded', async () => {
  $('#search').addEventListener('submit', (ev) => { ev.preventDefault(); runSearch(queryFromForm(), false); });
  $('#search').addEventListener('reset', () => setTimeout(() => runSearch({}, false), 0));
  $('#goto').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const which = String(new FormData(ev.target).get('which') || '').trim();
    if (which) location.hash = `#/entry/${encodeURIComponent(which)}`;
  });
  $('#more').addEventListener('click', () => runSearch(lastQuery || {}, true));
  $('#file').addEventListener('change', (ev) => {
    const f = ev.target.files[0];
    if (f) checkFile(f).catch((err) => $('#verdict').replaceChildren(el('p', { class: 'error-box', text: `cannot check ${f.name}: ${err.message}` })));
  });
  window.addEventListener('hashchange', route);
  const saved = localStorage.getItem(TRUST_KEY) || '';
  $('#policy-text').value = saved;
  if (!chitVerify.cannot()) await loadTrust(saved);
  showTrust();
  $('#policy-use').addEventListener('click', async () => {
    const text = $('#policy-text').value;
    if (chitVerify.cannot()) { showTrust(); return; }
    await loadTrust(text);
    if (trust) localStorage.setItem(TRUST_KEY, text);
    showTrust();
    await loadCheckpoint();
    route();
  });
  $('#policy-forget').addEventListener('click', async () => {
    localStorage.removeItem(TRUST_KEY);
    $('#policy-text').value = '';
    await loadTrust('');
    showTrust();
    await loadCheckpoint();
    route();
  });
  for (const root of [document, $('#about').content]) {
    for (const u of root.querySelectorAll('.here-url')) u.textContent = location.origin;
  }
  await Promise.all([loadCheckpoint(), runSearch({}, false)]);
  route();
  setInterval(loadCheckpoint, 10000);
  document.body.dataset.ready = '1';
});
