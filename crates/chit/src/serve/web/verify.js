// What the page checks for itself, in the browser, with keys the reader
// gives it (never with keys from the server): a checkpoint's signature by
// the log's key and its witnesses' cosignatures (C2SP signed-note,
// tlog-cosignature), the reader's quorum (C2SP tlog-policy), and an
// entry's inclusion proof (RFC 9162) over the SHA-256 of its bytes, all
// with WebCrypto. WebCrypto exists only in secure contexts (HTTPS, and
// http://localhost): elsewhere nothing here runs, and the page says so.
'use strict';

const chitVerify = (() => {
  const enc = new TextEncoder();
  const ED25519_LOG = 0x01;
  const COSIGNATURE_V1 = 0x04;
  const SUBTREE_MLDSA44 = 0x06;

  /** Why this browser cannot check anything here, or null when it can. */
  function cannot() {
    if (!window.isSecureContext) {
      return 'this page is not in a secure context (it is served over plain HTTP, not from ' +
        'localhost): browsers offer WebCrypto only over HTTPS or on localhost, so nothing ' +
        'shown here can be checked by this browser. Open the log over HTTPS, or verify with ' +
        'chit on your own machine.';
    }
    if (!window.crypto || !crypto.subtle) return 'this browser offers no WebCrypto.';
    return null;
  }

  function strictB64(s) {
    if (typeof s !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) {
      throw new Error('not base64');
    }
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    if (btoa(bin) !== s) throw new Error('not canonical base64');
    return out;
  }

  function concat(...parts) {
    const n = parts.reduce((a, p) => a + p.length, 0);
    const out = new Uint8Array(n);
    let at = 0;
    for (const p of parts) { out.set(p, at); at += p.length; }
    return out;
  }

  function same(a, b) {
    if (a.length !== b.length) return false;
    let d = 0;
    for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
    return d === 0;
  }

  const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

  async function sha256(bytes) {
    return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  }

  /** A verifier key, NAME+HASH+BASE64(type ‖ key), with its hash checked. */
  async function readVkey(vkey) {
    const a = vkey.indexOf('+');
    const b = a < 0 ? -1 : vkey.indexOf('+', a + 1);
    if (a <= 0 || b < 0) throw new Error(`${vkey}: not a verifier key (NAME+HASH+KEY)`);
    const [name, hash, b64] = [vkey.slice(0, a), vkey.slice(a + 1, b), vkey.slice(b + 1)];
    let raw;
    try { raw = strictB64(b64); } catch (e) { throw new Error(`${vkey}: its key is ${e.message}`); }
    if (raw.length < 2) throw new Error(`${vkey}: no key`);
    const type = raw[0];
    const key = raw.slice(1);
    const id = (await sha256(concat(enc.encode(name), new Uint8Array([0x0a, type]), key))).slice(0, 4);
    if (!/^[0-9a-f]{8}$/.test(hash) || hex(id) !== hash) throw new Error(`${vkey}: its hash is not its key's`);
    return { vkey, name, hash, type, key, id };
  }

  /**
   * A trust policy as C2SP tlog-policy writes one: `log VKEY [URL]`,
   * `witness NAME VKEY [URL]`, `group NAME all|any|K MEMBER...`,
   * `quorum NAME|none`; or one log key alone (a quorum of none).
   */
  async function readPolicy(text) {
    const p = { logs: [], witnesses: [], groups: [], quorum: null, text };
    const names = new Map();
    const lines = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    if (lines.length === 1 && !/\s/.test(lines[0])) {
      const k = await readVkey(lines[0]);
      if (k.type !== ED25519_LOG || k.key.length !== 32) throw new Error(`${lines[0]}: not an Ed25519 note key`);
      p.logs.push(k);
      return p;
    }
    let quorumSeen = false;
    for (const [n, line] of lines.entries()) {
      const [word, ...args] = line.split(/[ \t]+/);
      const bad = (why) => new Error(`policy line ${n + 1} (${line}): ${why}`);
      const fresh = (name) => {
        if (name === 'none') throw bad('"none" is reserved');
        if (names.has(name)) throw bad(`${name} is defined twice`);
      };
      if (word === 'log') {
        if (args.length < 1 || args.length > 2) throw bad('want: log <vkey> [<url>]');
        const k = await readVkey(args[0]);
        if (k.type !== ED25519_LOG || k.key.length !== 32) throw bad('not an Ed25519 note key');
        p.logs.push(k);
      } else if (word === 'witness') {
        if (args.length < 2 || args.length > 3) throw bad('want: witness <name> <vkey> [<url>]');
        fresh(args[0]);
        const k = await readVkey(args[1]);
        if (!(k.type === COSIGNATURE_V1 && k.key.length === 32) && !(k.type === SUBTREE_MLDSA44 && k.key.length === 1312)) {
          throw bad('not a witness key (cosignature/v1 Ed25519, or ML-DSA-44)');
        }
        names.set(args[0], { witness: p.witnesses.length });
        p.witnesses.push({ label: args[0], ...k });
      } else if (word === 'group') {
        if (args.length < 3) throw bad('want: group <name> all|any|<k> <name>...');
        const [name, t, ...members] = args;
        fresh(name);
        const k = t === 'all' ? members.length : t === 'any' ? 1 : /^[1-9][0-9]*$/.test(t) ? Number(t) : NaN;
        if (!(k >= 1 && k <= members.length)) throw bad('the threshold must be all, any or 1 to the number of members');
        const list = members.map((m) => {
          const d = names.get(m);
          if (!d) throw bad(`${m} is not defined above this line`);
          if (d.used) throw bad(`${m} is a group member twice`);
          d.used = true;
          return d;
        });
        names.set(name, { group: p.groups.length });
        p.groups.push({ name, k, members: list });
      } else if (word === 'quorum') {
        if (args.length !== 1) throw bad('want: quorum <name>');
        if (quorumSeen) throw bad('a second quorum line');
        quorumSeen = true;
        if (args[0] !== 'none') {
          const d = names.get(args[0]);
          if (!d) throw bad(`${args[0]} is not defined above this line`);
          p.quorum = d;
        }
      } else {
        throw bad('want log, witness, group or quorum');
      }
    }
    if (!quorumSeen) throw new Error('the policy has no quorum line (quorum none, for no witnesses)');
    if (!p.logs.length) throw new Error('the policy lists no log');
    return p;
  }

  /** What the policy holds a log to, in words. */
  function describe(p) {
    const logs = p.logs.map((l) => `${l.name} (key ${l.hash})`).join(', ');
    const ws = p.witnesses.map((w) => `${w.label} = ${w.name} (key ${w.hash}${w.type === SUBTREE_MLDSA44 ? ', ML-DSA-44' : ''})`);
    const member = (d) => d.witness !== undefined ? p.witnesses[d.witness].label : group(p.groups[d.group]);
    const group = (g) => `${g.k === g.members.length ? 'all' : g.k} of (${g.members.map(member).join(', ')})`;
    const quorum = p.quorum ? member(p.quorum) : 'none';
    return { logs, witnesses: ws, quorum };
  }

  /** A note's text and signature lines, read as chit reads them. */
  function readNote(note) {
    const split = note.lastIndexOf('\n\n');
    if (split < 0) throw new Error('no blank line before the signatures');
    const text = note.slice(0, split + 1);
    const sigs = note.slice(split + 2);
    if (!sigs.endsWith('\n')) throw new Error('the last signature line has no line feed');
    const lines = sigs.slice(0, -1).split('\n').map((line) => {
      if (!line.startsWith('\u2014 ')) throw new Error('a line after the text is not a signature');
      const rest = line.slice(2);
      const sp = rest.indexOf(' ');
      if (sp <= 0) throw new Error('a signature line has no signature');
      const raw = strictB64(rest.slice(sp + 1));
      if (raw.length < 5) throw new Error('a signature is too short');
      return { name: rest.slice(0, sp), id: raw.slice(0, 4), bytes: raw.slice(4) };
    });
    return { text, lines };
  }

  async function ed25519(key, sig, msg) {
    if (sig.length !== 64) return false;
    const k = await crypto.subtle.importKey('raw', key, { name: 'Ed25519' }, false, ['verify']);
    return crypto.subtle.verify({ name: 'Ed25519' }, k, sig, msg);
  }

  /**
   * A signed checkpoint checked under the policy: the log's signature,
   * each witness's cosignature, the quorum. `ok` only when the log's
   * signature verified and the quorum is met.
   */
  async function checkpoint(note, p) {
    const out = { ok: false, log: null, witnesses: [], quorum: false, why: null };
    let n;
    try { n = readNote(note); } catch (e) { out.why = `not a signed note: ${e.message}`; return out; }
    const body = n.text.split('\n');
    const [origin, size, root] = body;
    out.origin = origin;
    if (!/^(0|[1-9][0-9]*)$/.test(size || '')) { out.why = 'its size is not a decimal number'; return out; }
    out.size = BigInt(size);
    try { out.root = strictB64(root || ''); } catch (_) { out.root = null; }
    if (!out.root || out.root.length !== 32) { out.why = 'its root is not base64 of 32 bytes'; return out; }
    out.rootText = root;
    const logs = p.logs.filter((l) => l.name === origin);
    if (!logs.length) { out.why = `the policy lists no log named ${origin}`; return out; }
    // Every signature line by a key the policy lists is checked, as chit
    // opens a note: a line two listed keys could have made, a listed key
    // that signed twice, or a signature by one that fails, fails the
    // checkpoint. Lines by other keys are kept, not trusted.
    const known = [...logs.map((k) => ({ log: k })), ...p.witnesses.map((w, i) => ({ w, i }))];
    const used = new Set();
    for (const s of n.lines) {
      const match = known.filter((k) => { const v = k.log || k.w; return v.name === s.name && same(v.id, s.id); });
      if (!match.length) continue;
      const name = `${s.name} (key ${hex(s.id)})`;
      if (match.length > 1) { out.why = `a signature two of the policy's keys could have made: ${name}`; return out; }
      const k = match[0];
      if (used.has(k)) { out.why = `two signatures by one key: ${name}`; return out; }
      used.add(k);
      if (k.log) {
        if (!await ed25519(k.log.key, s.bytes, enc.encode(n.text))) {
          out.log = { ok: false, key: k.log };
          out.why = `the signature by the log's key ${k.log.hash} does not verify`;
          return out;
        }
        if (!out.log) out.log = { ok: true, key: k.log };
        continue;
      }
      const { w, i } = k;
      if (w.type === SUBTREE_MLDSA44) {
        out.witnesses.push({ i, w, ok: null, why: 'an ML-DSA-44 cosignature, which this page cannot check' });
        continue;
      }
      const time = s.bytes.length === 72 ? new DataView(s.bytes.buffer, s.bytes.byteOffset, 8).getBigUint64(0) : 0n;
      const msg = enc.encode(`cosignature/v1\ntime ${time}\n${n.text}`);
      const good = time > 0n && await ed25519(w.key, s.bytes.slice(8), msg);
      if (!good) {
        out.witnesses.push({ i, w, ok: false, why: 'its cosignature does not verify' });
        out.why = `${w.label}: a cosignature that does not verify`;
        return out;
      }
      out.witnesses.push({ i, w, ok: true, time });
    }
    if (!out.log) { out.why = `no signature by the log's key (${logs.map((l) => l.hash).join(', ')})`; return out; }
    const cosigned = new Set(out.witnesses.filter((x) => x.ok === true).map((x) => x.i));
    const met = (d) => d.witness !== undefined ? cosigned.has(d.witness)
      : p.groups[d.group].members.filter(met).length >= p.groups[d.group].k;
    out.quorum = p.quorum ? met(p.quorum) : true;
    if (!out.quorum) out.why = 'its cosignatures do not meet the policy\'s quorum';
    out.ok = out.quorum;
    return out;
  }

  async function node(l, r) { return sha256(concat(new Uint8Array([1]), l, r)); }

  /** The root an inclusion proof gives (RFC 9162 §2.1.3.2), or why none. */
  async function rootOf(leaf, index, size, proof) {
    if (index >= size) throw new Error(`index ${index} is past the tree of ${size}`);
    let fn = index;
    let sn = size - 1n;
    let r = leaf;
    for (const p of proof) {
      if (sn === 0n) throw new Error('the proof is longer than the tree is deep');
      if ((fn & 1n) === 1n || fn === sn) {
        r = await node(p, r);
        if ((fn & 1n) === 0n) while ((fn & 1n) === 0n && fn !== 0n) { fn >>= 1n; sn >>= 1n; }
      } else {
        r = await node(r, p);
      }
      fn >>= 1n;
      sn >>= 1n;
    }
    if (sn !== 0n) throw new Error('the proof is shorter than the tree is deep');
    return r;
  }

  /**
   * An entry's bundle (as /v1/entries/N serves it) checked: its checkpoint
   * under the policy, and its entry's bytes at its index under that
   * checkpoint's root (and, where the page names it by a content address,
   * bytes of that address).
   */
  async function bundle(b, p, address) {
    const cp = await checkpoint(String(b.checkpoint || ''), p);
    const out = { checkpoint: cp, inclusion: { ok: false, why: null } };
    try {
      const entry = strictB64(b.entry);
      const proof = (b.inclusion_proof || []).map((h) => {
        const x = strictB64(h);
        if (x.length !== 32) throw new Error('a proof hash is not 32 bytes');
        return x;
      });
      if (!Number.isSafeInteger(b.index) || b.index < 0) throw new Error('no index');
      if (cp.size === undefined || !cp.root) throw new Error(`its checkpoint cannot be read (${cp.why})`);
      if (b.origin !== cp.origin) throw new Error(`the bundle says it is from log ${b.origin}, but its checkpoint is ${cp.origin}'s`);
      const leaf = await sha256(concat(new Uint8Array([0]), entry));
      const root = await rootOf(leaf, BigInt(b.index), cp.size, proof);
      if (!same(root, cp.root)) throw new Error('the entry and its proof do not give the checkpoint\'s root');
      if (!cp.ok) throw new Error('they give the checkpoint\'s root, but that checkpoint is not verified');
      out.entrySha256 = hex(await sha256(entry));
      if (address && address !== `sha256:${out.entrySha256}`) {
        throw new Error(`it is shown as ${address}, but its bytes are sha256:${out.entrySha256}`);
      }
      out.inclusion.ok = true;
    } catch (e) {
      out.inclusion.why = e.message;
    }
    return out;
  }

  return { cannot, readPolicy, describe, checkpoint, bundle };
})();
