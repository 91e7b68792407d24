//! The float32 network and its batch-dependent reductions.

use crate::{Config, Mode};

/// Vocabulary size: token ids are `0..VOCAB`.
pub const VOCAB: usize = 64;
/// Embedding (state) width.
pub const EMBED: usize = 32;
/// Distinct hidden units.
pub const HIDDEN: usize = 128;
/// Length of the final reduction: every hidden unit appears twice.
pub const REDUCE: usize = 2 * HIDDEN;
/// How much of the running state survives each new token.
const DECAY: f32 = 0.75;
/// Magnitude of the cancelling pair of final-layer weights.
const BIG: f32 = 32768.0;
/// Magnitude of the part of the final layer that survives cancellation.
const SMALL: f32 = 0.35;

/// splitmix64: a small deterministic generator for the weights.
struct SplitMix(u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        let bits = (self.next_u64() >> 40) as u32; // 24 random bits
        (bits as f32 / (1u32 << 23) as f32) - 1.0
    }
}

/// The weights. Matrices used in reductions are stored input-major
/// (`[input][output]`) so each reduction step updates every output at once;
/// every output's own sum still runs strictly in input order.
pub struct Model {
    /// `[VOCAB][EMBED]`
    embed: Vec<f32>,
    /// `[EMBED][HIDDEN]`
    w1: Vec<f32>,
    /// `[HIDDEN]`
    b1: Vec<f32>,
    /// `[REDUCE][VOCAB]`
    w2: Vec<f32>,
    /// Which hidden unit feeds each of the `REDUCE` positions.
    source: Vec<usize>,
}

impl Model {
    pub fn new(seed: u64) -> Model {
        let mut rng = SplitMix(seed ^ 0x6368_6974_2d66_6978); // "chit-fix"
        let embed = (0..VOCAB * EMBED).map(|_| rng.unit()).collect();
        let w1_scale = 1.5 / (EMBED as f32).sqrt();
        let w1 = (0..EMBED * HIDDEN).map(|_| rng.unit() * w1_scale).collect();
        let b1 = (0..HIDDEN).map(|_| rng.unit() * 0.2).collect();
        // Positions 0..HIDDEN carry each unit once with weight BIG*r + s;
        // positions HIDDEN..REDUCE carry the same units again, in a shuffled
        // order, with weight -BIG*r. In exact arithmetic the BIG parts cancel
        // and the logit is sum(s*h); in f32 the running sum climbs to ~1e5
        // and the rounding left over depends on how the sum is split.
        let mut second: Vec<usize> = (0..HIDDEN).collect();
        for i in (1..HIDDEN).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            second.swap(i, j);
        }
        let source: Vec<usize> = (0..HIDDEN).chain(second.iter().copied()).collect();
        let mut big = vec![0f32; HIDDEN * VOCAB];
        let mut small = vec![0f32; HIDDEN * VOCAB];
        for j in 0..HIDDEN * VOCAB {
            big[j] = rng.unit() * BIG;
            small[j] = rng.unit() * SMALL;
        }
        let mut w2 = vec![0f32; REDUCE * VOCAB];
        for (k, &unit) in source.iter().enumerate() {
            for v in 0..VOCAB {
                let i = unit * VOCAB + v;
                w2[k * VOCAB + v] = if k < HIDDEN {
                    big[i] + small[i]
                } else {
                    -big[i]
                };
            }
        }
        Model {
            embed,
            w1,
            b1,
            w2,
            source,
        }
    }

    /// The state of an empty context.
    pub fn empty_state() -> State {
        State([0.0; EMBED])
    }

    /// Appends one token to a context's state: `s = DECAY * s + E[t]`,
    /// elementwise, so it never depends on the batch.
    pub fn push(&self, state: &mut State, token: u32) {
        let row = &self.embed[token as usize * EMBED..(token as usize + 1) * EMBED];
        for (s, e) in state.0.iter_mut().zip(row) {
            *s = *s * DECAY + *e;
        }
    }

    /// The state after reading a prompt.
    pub fn prefill(&self, prompt: &[u32]) -> State {
        let mut state = Model::empty_state();
        for &t in prompt {
            self.push(&mut state, t);
        }
        state
    }

    /// Greedy next token for one context, with every reduction split into
    /// `splits` partial sums.
    pub fn next_token(&self, state: &State, splits: usize) -> u32 {
        let mut hidden = [0f32; HIDDEN];
        split_reduce(&state.0, &self.w1, HIDDEN, splits, &mut hidden);
        for (h, b) in hidden.iter_mut().zip(&self.b1) {
            *h = (*h + *b).tanh();
        }
        let mut x = [0f32; REDUCE];
        for (x, &unit) in x.iter_mut().zip(&self.source) {
            *x = hidden[unit];
        }
        let mut logits = [0f32; VOCAB];
        split_reduce(&x, &self.w2, VOCAB, splits, &mut logits);
        argmax(&logits)
    }
}

/// A context's running state.
#[derive(Clone, Copy, Debug)]
pub struct State([f32; EMBED]);

/// `out[o] = sum_i input[i] * w[i][o]`, where the sum over `i` is cut into
/// `splits` contiguous chunks (clamped to `1..=input.len() / 2`, so chunks
/// hold at least two terms: one-term chunks would add up to the plain
/// sequential sum again), each chunk is summed left to right from zero in
/// f32, and the chunk sums are then added left to right. With `splits == 1`
/// this is the plain sequential sum.
fn split_reduce(input: &[f32], w: &[f32], outputs: usize, splits: usize, out: &mut [f32]) {
    let n = input.len();
    let splits = splits.clamp(1, (n / 2).max(1));
    let mut partial = [0f32; if VOCAB > HIDDEN { VOCAB } else { HIDDEN }];
    let partial = &mut partial[..outputs];
    for c in 0..splits {
        let (lo, hi) = (c * n / splits, (c + 1) * n / splits);
        partial.fill(0.0);
        for i in lo..hi {
            let a = input[i];
            let row = &w[i * outputs..(i + 1) * outputs];
            for (p, wv) in partial.iter_mut().zip(row) {
                *p += a * *wv;
            }
        }
        if c == 0 {
            out.copy_from_slice(partial);
        } else {
            for (o, p) in out.iter_mut().zip(partial.iter()) {
                *o += *p;
            }
        }
    }
}

/// Index of the largest logit; the lowest index wins ties.
fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best as u32
}

/// How many partial sums each reduction uses when `batch` sequences share
/// a decoding step.
pub fn splits_for(mode: Mode, batch: usize) -> usize {
    match mode {
        Mode::Coupled => batch.max(1),
        Mode::Invariant | Mode::OneSlot => 1,
    }
}

/// The fixture's tokenizer: each prompt byte is one token, `byte % VOCAB`.
pub fn tokenize(prompt: &str) -> Vec<u32> {
    prompt
        .bytes()
        .map(|b| u32::from(b) % VOCAB as u32)
        .collect()
}

/// The fixture's chat template (Gemma's turn markers): each message as
/// `<start_of_turn>ROLE\nCONTENT<end_of_turn>\n`, then the opening of the
/// model's turn. `None` unless every message is `{"role", "content"}`
/// strings and there is at least one.
pub fn render_chat(messages: &serde_json::Value) -> Option<String> {
    let list = messages.as_array().filter(|l| !l.is_empty())?;
    let mut out = String::new();
    for m in list {
        let role = m.get("role")?.as_str()?;
        let content = m.get("content")?.as_str()?;
        out.push_str(&format!("<start_of_turn>{role}\n{content}<end_of_turn>\n"));
    }
    out.push_str("<start_of_turn>model\n");
    Some(out)
}

/// The text of one generated token.
pub fn piece(token: u32) -> String {
    format!("t{token} ")
}

/// See [`crate::decode_batch`].
pub fn decode_batch(config: &Config, prompts: &[&str], max_tokens: usize) -> Vec<Vec<u32>> {
    let model = Model::new(config.seed);
    let mut states: Vec<State> = prompts
        .iter()
        .map(|p| model.prefill(&tokenize(p)))
        .collect();
    let mut out = vec![Vec::with_capacity(max_tokens); prompts.len()];
    // OneSlot decodes one sequence at a time, so its batch is always 1.
    let batch = match config.mode {
        Mode::OneSlot => 1,
        _ => prompts.len(),
    };
    let splits = splits_for(config.mode, batch);
    for _ in 0..max_tokens {
        for (state, tokens) in states.iter_mut().zip(out.iter_mut()) {
            let t = model.next_token(state, splits);
            model.push(state, t);
            tokens.push(t);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompts() -> Vec<String> {
        (0..8)
            .map(|i| format!("prompt number {i}: the quick brown fox {}", i * 37))
            .collect()
    }

    fn config(mode: Mode) -> Config {
        Config {
            mode,
            ..Config::default()
        }
    }

    /// All prompts decoded in batches of exactly `batch` (padded with filler
    /// prompts), returned in prompt order.
    fn batched(mode: Mode, prompts: &[String], batch: usize) -> Vec<Vec<u32>> {
        let fillers: Vec<String> = (0..batch).map(|i| format!("filler {i}")).collect();
        let mut out = Vec::new();
        for group in prompts.chunks(batch) {
            let mut all: Vec<&str> = group.iter().map(String::as_str).collect();
            let pad = batch - all.len();
            all.extend(fillers.iter().take(pad).map(String::as_str));
            out.extend(
                decode_batch(&config(mode), &all, 16)
                    .into_iter()
                    .take(group.len()),
            );
        }
        out
    }

    #[test]
    fn coupled_outputs_depend_on_batch_size() {
        let prompts = prompts();
        let alone = batched(Mode::Coupled, &prompts, 1);
        for batch in [2, 4, 8, 32, 256] {
            let together = batched(Mode::Coupled, &prompts, batch);
            let differing = (0..prompts.len())
                .filter(|&i| alone[i] != together[i])
                .count();
            assert!(
                differing >= 2,
                "batch {batch}: only {differing} of 8 prompts differ from batch 1"
            );
            // Same batch size, same tokens.
            assert_eq!(together, batched(Mode::Coupled, &prompts, batch));
        }
    }

    #[test]
    fn invariant_outputs_do_not_depend_on_batch_size() {
        let prompts = prompts();
        let alone = batched(Mode::Invariant, &prompts, 1);
        for batch in [2, 4, 8, 32, 256] {
            assert_eq!(
                alone,
                batched(Mode::Invariant, &prompts, batch),
                "batch {batch}"
            );
        }
        // Invariant equals Coupled at batch 1, and OneSlot is Invariant.
        assert_eq!(alone, batched(Mode::Coupled, &prompts, 1));
        assert_eq!(alone, batched(Mode::OneSlot, &prompts, 8));
    }

    #[test]
    fn decoding_is_deterministic() {
        let prompts = prompts();
        let refs: Vec<&str> = prompts.iter().map(String::as_str).collect();
        for mode in [Mode::Coupled, Mode::Invariant] {
            let a = decode_batch(&config(mode), &refs, 16);
            let b = decode_batch(&config(mode), &refs, 16);
            assert_eq!(a, b);
            assert!(a.iter().all(|t| t.len() == 16));
            assert!(a.iter().flatten().all(|&t| (t as usize) < VOCAB));
        }
        // A different seed is a different network.
        let other = Config {
            seed: 8,
            ..config(Mode::Invariant)
        };
        assert_ne!(
            decode_batch(&other, &refs, 16),
            decode_batch(&config(Mode::Invariant), &refs, 16)
        );
    }

    #[test]
    fn outputs_are_not_degenerate() {
        let prompts = prompts();
        let refs: Vec<&str> = prompts.iter().map(String::as_str).collect();
        let out = decode_batch(&config(Mode::Invariant), &refs, 16);
        let mut distinct: Vec<u32> = out.iter().flatten().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(
            distinct.len() >= 8,
            "only {} distinct tokens",
            distinct.len()
        );
    }

    /// Prints the cost of one decoding step at batch 256; run with
    /// `cargo test -p chit-fixture --release -- --ignored --nocapture step_cost`.
    #[test]
    #[ignore]
    fn step_cost() {
        let model = Model::new(7);
        let mut states: Vec<State> = (0..256)
            .map(|i| model.prefill(&tokenize(&format!("sequence {i}"))))
            .collect();
        let steps = 200;
        let started = std::time::Instant::now();
        for _ in 0..steps {
            for state in states.iter_mut() {
                let t = model.next_token(state, splits_for(Mode::Coupled, 256));
                model.push(state, t);
            }
        }
        let per_step = started.elapsed() / steps;
        println!("batch 256: {per_step:?} per step");
    }
}
