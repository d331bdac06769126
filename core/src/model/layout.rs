//! How a model's layers are cut into pipeline stages.
//!
//! Two spellings are accepted:
//!
//! * Megatron-Core's `--pipeline-model-parallel-layout`: `E` the embedding, `t` a transformer
//!   layer, `m` a multi-token-prediction layer (not one of `--layers`: see [`Piece::mtp`]), `L` the loss
//!   and LM head, `|` between stages, `X*N` repeats the atom before it (a letter or a
//!   parenthesised group) `N` times; commas and spaces are ignored. Stages are given in pipeline
//!   order, `P × chunks` of them: `Et*3|(tt|)*29,m|L`.
//! * A plain list of transformer layers per device share, `4,4,4,4`: the embedding goes with the
//!   first share and the LM head with the last.
//!
//! Without a layout, layers are split as evenly as possible, earlier shares taking the extra
//! layer ([`Layout::even`]).

use crate::error::{Field, ParamError};

/// The largest number of stages a layout may describe.
pub const MAX_LAYOUT_STAGES: usize = 65_536;

/// What one piece (stage) of the model holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Piece {
    /// Whether it holds the embedding.
    pub embedding: bool,
    /// Transformer layers of the main model (what `--layers` counts).
    pub layers: u32,
    /// Multi-token-prediction layers (`m`, DeepSeek-V3's MTP modules): each a transformer
    /// layer, a projection and a pass through the shared LM head and loss, on top of
    /// `--layers` as in Megatron-Core (`--mtp-num-layers`).
    pub mtp: u32,
    /// Whether it holds the LM head and the loss.
    pub loss: bool,
}

/// The pieces of a model in pipeline order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// One entry per stage, in pipeline order.
    pub pieces: Vec<Piece>,
}

impl Layout {
    /// `layers` split over `devices` shares as evenly as possible, earlier shares taking the
    /// extra layer; the embedding on the first share, the LM head on the last.
    pub fn even(layers: u32, devices: u32) -> Layout {
        let devices = devices.max(1);
        let (base, extra) = (layers / devices, layers % devices);
        let mut pieces: Vec<Piece> =
            (0..devices).map(|k| Piece { layers: base + u32::from(k < extra), ..Piece::default() }).collect();
        mark_ends(&mut pieces);
        Layout { pieces }
    }

    /// Reads `spec` (a Megatron layout or a list of layer counts) for a model of `layers`
    /// transformer layers on `devices` devices.
    ///
    /// # Errors
    /// A [`ParamError`] on [`Field::Layout`] when the syntax is wrong, the stage count is not a
    /// multiple of `devices`, or the layers do not add up to `layers`.
    pub fn parse(spec: &str, layers: u32, devices: u32) -> Result<Layout, ParamError> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(err("the layout is empty").hint("write e.g. `Et*4|t*4|t*4|t*4L` or `4,4,4,4`"));
        }
        // No letter, group or stage mark: a list of counts, however mistyped (`8,8,-8`, `8;8`).
        let plain = !spec.chars().any(|c| c.is_ascii_alphabetic() || "|()*".contains(c));
        let layout = if plain { parse_counts(spec)? } else { parse_megatron(spec)? };
        layout.check(layers, devices)?;
        Ok(layout)
    }

    /// Number of stages.
    pub fn stages(&self) -> usize {
        self.pieces.len()
    }

    /// Transformer layers in all pieces.
    pub fn layers(&self) -> u64 {
        self.pieces.iter().map(|p| u64::from(p.layers)).sum()
    }

    /// Whether layers split evenly: every share of `devices` holds the same number.
    pub fn is_even(&self, devices: u32) -> bool {
        let shares = self.share_layers(devices);
        shares.windows(2).all(|w| w[0] == w[1])
    }

    /// Transformer layers of each device share (`stages / devices` consecutive pieces).
    pub fn share_layers(&self, devices: u32) -> Vec<u32> {
        let per = (self.stages() / devices.max(1) as usize).max(1);
        self.pieces.chunks(per).map(|c| c.iter().map(|p| p.layers).sum()).collect()
    }

    /// The layout in Megatron's syntax, stages joined by `|`.
    pub fn to_megatron(&self) -> String {
        let stage = |p: &Piece| {
            let mut s = String::new();
            if p.embedding {
                s.push('E');
            }
            match p.layers {
                0 => {}
                1 => s.push('t'),
                n => s.push_str(&format!("t*{n}")),
            }
            match p.mtp {
                0 => {}
                1 => s.push('m'),
                n => s.push_str(&format!("m*{n}")),
            }
            if p.loss {
                s.push('L');
            }
            s
        };
        self.pieces.iter().map(stage).collect::<Vec<_>>().join("|")
    }

    fn check(&self, layers: u32, devices: u32) -> Result<(), ParamError> {
        let n = self.stages();
        if n == 0 || n % devices.max(1) as usize != 0 {
            return Err(err(format!("the layout has {n} stages, expected a multiple of the {devices} devices"))
                .hint("give one stage per device, or chunks × devices stages in pipeline order"));
        }
        if self.layers() != u64::from(layers) {
            return Err(err(format!(
                "the layout holds {} transformer layers, expected --layers {layers}",
                self.layers()
            ))
            .hint("make the `t`s (or the counts) add up to --layers"));
        }
        // MTP modules predict from the main model's last hidden state: after every layer.
        let first_mtp = self.pieces.iter().position(|p| p.mtp > 0);
        let last_layer = self.pieces.iter().rposition(|p| p.layers > 0);
        if let (Some(m), Some(t)) = (first_mtp, last_layer) {
            if t > m {
                return Err(err(format!(
                    "stage {} holds a transformer layer after the MTP layer (m) of stage {}",
                    t + 1,
                    m + 1
                ))
                .hint("multi-token-prediction layers follow the model's last transformer layer: put every `m` after the last `t`"));
            }
        }
        let embeddings = self.pieces.iter().filter(|p| p.embedding).count();
        let losses = self.pieces.iter().filter(|p| p.loss).count();
        if embeddings != 1 || losses != 1 {
            return Err(err(format!(
                "the layout has {embeddings} embeddings (E) and {losses} LM heads (L), expected one of each"
            ))
            .hint("put `E` in the first stage and `L` in the last"));
        }
        // Data enters at the embedding and leaves at the head: the first and the last stage.
        if let Some(k) = self.pieces.iter().position(|p| p.embedding).filter(|&k| k != 0) {
            return Err(err(format!("the embedding (E) is in stage {}, expected the first stage", k + 1))
                .hint("put `E` in the first stage and `L` in the last"));
        }
        if let Some(k) = self.pieces.iter().position(|p| p.loss).filter(|&k| k + 1 != n) {
            return Err(err(format!("the LM head (L) is in stage {}, expected the last stage ({n})", k + 1))
                .hint("put `E` in the first stage and `L` in the last"));
        }
        Ok(())
    }
}

fn err(message: impl Into<String>) -> ParamError {
    ParamError::new(Field::Layout, message)
}

fn mark_ends(pieces: &mut [Piece]) {
    if let Some(first) = pieces.first_mut() {
        first.embedding = true;
    }
    if let Some(last) = pieces.last_mut() {
        last.loss = true;
    }
}

fn parse_counts(spec: &str) -> Result<Layout, ParamError> {
    let mut pieces = Vec::new();
    for (i, item) in spec.split(',').enumerate() {
        let item = item.trim();
        let layers = item.parse::<u32>().map_err(|_| {
            err(format!("item {} of the layout is `{item}`, expected a number of layers", i + 1))
                .hint("write one whole number per device share, e.g. `5,6,6,5`")
        })?;
        pieces.push(Piece { layers, ..Piece::default() });
        if pieces.len() > MAX_LAYOUT_STAGES {
            return Err(err(format!("the layout has more than {MAX_LAYOUT_STAGES} stages"))
                .hint("give one stage per device, or chunks × devices stages"));
        }
    }
    mark_ends(&mut pieces);
    Ok(Layout { pieces })
}

/// Expands repetitions and groups into a flat token string, then cuts it at `|`.
fn parse_megatron(spec: &str) -> Result<Layout, ParamError> {
    let chars: Vec<char> = spec.chars().filter(|c| !c.is_whitespace() && *c != ',').collect();
    let mut pos = 0;
    let tokens = parse_sequence(&chars, &mut pos, 0)?;
    if pos < chars.len() {
        return Err(err(format!("unexpected `{}` at position {} of the layout", chars[pos], pos + 1))
            .hint("parentheses must be balanced"));
    }
    for (mark, name) in [('E', "embeddings (E)"), ('L', "LM heads (L)")] {
        let count = tokens.iter().filter(|&&t| t == mark).count();
        if count > 1 {
            return Err(err(format!("the layout has {count} {name}, expected one"))
                .hint("put `E` in the first stage and `L` in the last"));
        }
    }
    let mtp = tokens.iter().filter(|&&t| t == 'm').count();
    if mtp > MAX_MTP {
        return Err(err(format!("the layout has {mtp} MTP layers (m), at most {MAX_MTP}"))
            .hint("DeepSeek-V3 uses one (`--mtp-num-layers 1` in Megatron-Core)"));
    }
    let mut pieces = vec![Piece::default()];
    for t in tokens {
        let stage = pieces.len();
        let Some(piece) = pieces.last_mut() else { break };
        match t {
            'E' => piece.embedding = true,
            't' if piece.mtp > 0 => {
                return Err(err(format!("stage {stage} holds a transformer layer (t) after its MTP layer (m)"))
                    .hint("multi-token-prediction layers follow the model's last transformer layer: put every `m` after the last `t`"));
            }
            't' => piece.layers += 1,
            'm' => piece.mtp += 1,
            'L' => piece.loss = true,
            _ => pieces.push(Piece::default()),
        }
    }
    Ok(Layout { pieces })
}

/// The most MTP layers (`m`) a layout may hold.
const MAX_MTP: usize = 64;

/// The largest expanded layout, in tokens.
const MAX_TOKENS: usize = 4_000_000;

fn parse_sequence(chars: &[char], pos: &mut usize, depth: usize) -> Result<Vec<char>, ParamError> {
    if depth > 32 {
        return Err(err("the layout nests parentheses more than 32 deep")
            .hint("repeat a group instead of nesting it: `(t*4|)*6` rather than `((t*4|))*6`"));
    }
    let mut out: Vec<char> = Vec::new();
    while let Some(&c) = chars.get(*pos) {
        let atom: Vec<char> = match c {
            'E' | 't' | 'm' | 'L' | '|' => {
                *pos += 1;
                vec![c]
            }
            '(' => {
                *pos += 1;
                let inner = parse_sequence(chars, pos, depth + 1)?;
                if chars.get(*pos) != Some(&')') {
                    return Err(err("a `(` in the layout is never closed").hint("close every group with `)`"));
                }
                *pos += 1;
                inner
            }
            ')' => return Ok(out),
            other => {
                return Err(err(format!("unexpected `{other}` at position {} of the layout", *pos + 1))
                    .hint("use E (embedding), t (layer), m (MTP layer), L (loss), | (next stage), *N, parentheses"));
            }
        };
        let times = parse_repeat(chars, pos)?;
        if out.len() + atom.len().saturating_mul(times) > MAX_TOKENS {
            return Err(err(format!("the layout expands to more than {MAX_TOKENS} tokens"))
                .hint("a layout lists stages and layers: counts are in the hundreds at most"));
        }
        for _ in 0..times {
            out.extend_from_slice(&atom);
        }
    }
    Ok(out)
}

fn parse_repeat(chars: &[char], pos: &mut usize) -> Result<usize, ParamError> {
    if chars.get(*pos) != Some(&'*') {
        return Ok(1);
    }
    *pos += 1;
    let start = *pos;
    while chars.get(*pos).is_some_and(char::is_ascii_digit) {
        *pos += 1;
    }
    let digits: String = chars[start..*pos].iter().collect();
    if digits.is_empty() {
        return Err(
            err(format!("`*` at position {start} of the layout must be followed by a count")).hint("write e.g. `t*4`")
        );
    }
    digits.parse::<usize>().ok().filter(|&n| n <= MAX_TOKENS).ok_or_else(|| {
        err(format!("the repetition `*{digits}` in the layout is too large, at most {MAX_TOKENS}"))
            .hint("a layout lists stages and layers: counts are in the hundreds at most")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layers(l: &Layout) -> Vec<u32> {
        l.pieces.iter().map(|p| p.layers).collect()
    }

    #[test]
    fn even_split_gives_earlier_shares_the_extra_layer() {
        let l = Layout::even(46, 16);
        assert_eq!(layers(&l), [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2]);
        assert!(l.pieces[0].embedding && l.pieces[15].loss);
        assert!(!l.is_even(16));
        assert!(Layout::even(32, 8).is_even(8));
    }

    #[test]
    fn megatron_syntax_expands_groups_and_repetitions() {
        let l = Layout::parse("Et*3|(tt|)*2,mL", 7, 4).unwrap();
        assert_eq!(layers(&l), [3, 2, 2, 0]);
        assert_eq!((l.pieces[0].embedding, l.pieces[3].loss, l.pieces[3].mtp), (true, true, 1));
        assert_eq!(l.to_megatron(), "Et*3|t*2|t*2|mL");
        let again = Layout::parse(&l.to_megatron(), 7, 4).unwrap();
        assert_eq!(again, l);
    }

    #[test]
    fn mtp_layers_are_not_among_the_layers_and_follow_the_last_one() {
        // DeepSeek-V3's layout shape: the MTP module in the stage before the loss.
        let l = Layout::parse("Et*3|(tt|)*29,m|L", 61, 32).unwrap();
        assert_eq!((l.layers(), l.pieces[30].mtp, l.pieces[30].layers), (61, 1, 0));
        assert_eq!(Layout::parse(&l.to_megatron(), 61, 32).unwrap(), l);
        let msg = |s: &str| Layout::parse(s, 4, 2).unwrap_err().to_string();
        assert!(msg("Et*2m|t*3L").contains("holds 5 transformer layers, expected --layers 4"));
        let e = msg("Et*2m|t*2L");
        assert!(e.contains("stage 2 holds a transformer layer after the MTP layer (m) of stage 1"), "{e}");
        assert!(e.contains("hint: multi-token-prediction layers follow"), "{e}");
        // Within a stage too: the `t` after the `m` is refused, not reordered.
        for within in ["Et*2|mt*2L", "Emt*4L"] {
            let p = if within.contains('|') { 2 } else { 1 };
            let e = Layout::parse(within, 4, p).unwrap_err().to_string();
            assert!(e.contains(&format!("stage {p} holds a transformer layer (t) after its MTP layer (m)")), "{e}");
        }
        let e = msg("Et*2|t*2m*65L");
        assert!(e.contains("65 MTP layers (m), at most 64"), "{e}");
    }

    #[test]
    fn plain_counts_put_the_embedding_first_and_the_head_last() {
        let l = Layout::parse("5, 6,6,5", 22, 4).unwrap();
        assert_eq!(layers(&l), [5, 6, 6, 5]);
        assert!(l.pieces[0].embedding && l.pieces[3].loss && !l.pieces[1].embedding);
    }

    #[test]
    fn interleaved_layouts_have_chunks_times_devices_stages() {
        let l = Layout::parse("Et|t|t|t|t|t|t|tL", 8, 4).unwrap();
        assert_eq!(l.stages(), 8);
        assert_eq!(l.share_layers(4), [2, 2, 2, 2]);
    }

    #[test]
    fn bad_layouts_say_what_is_wrong() {
        let msg = |s: &str, layers, p| Layout::parse(s, layers, p).unwrap_err().to_string();
        assert!(msg("Et*3|t*3", 6, 4).contains("2 stages, expected a multiple of the 4 devices"));
        assert!(msg("Et*3|t*3L", 8, 2).contains("holds 6 transformer layers, expected --layers 8"));
        assert!(msg("Et*3|t*x|L", 3, 3).contains("must be followed by a count"));
        assert!(msg("E(t*3|t*3L", 6, 2).contains("never closed"));
        assert!(msg("Et*3)|t*3L", 6, 2).contains("unexpected `)`"));
        assert!(msg("Ex|tL", 1, 2).contains("unexpected `x`"));
        assert!(msg("4,,4", 8, 2).contains("item 2 of the layout is ``"));
        assert!(msg("t*3|t*3", 6, 2).contains("0 embeddings (E) and 0 LM heads"));
        assert!(msg("(((t*100000)*100000)*100000)", 1, 1).contains("expands to more than"));
        assert!(msg("Et*99999999999999999999|L", 1, 1).contains("`*99999999999999999999` in the layout is too large"));
        assert!(msg("", 1, 1).contains("empty"));
        // Counts mistyped are read as counts, and the item that is wrong is named.
        assert!(msg("8,8,8,-8", 32, 4).contains("item 4 of the layout is `-8`"));
        assert!(msg("8,8,8,8.5", 32, 4).contains("item 4 of the layout is `8.5`"));
        assert!(msg("8;8;8;8", 32, 4).contains("item 1 of the layout is `8;8;8;8`"));
        // One embedding first, one head last.
        assert!(msg("Et*8|t*8|t*8|t*8LL", 32, 4).contains("the layout has 2 LM heads (L), expected one"));
        assert!(msg("EEt*8|t*8|t*8|t*8L", 32, 4).contains("2 embeddings (E), expected one"));
        assert!(msg("LEt*8|t*8|t*8|t*8", 32, 4).contains("the LM head (L) is in stage 1, expected the last stage (4)"));
        assert!(msg("t*8|Et*8|t*8|t*8L", 32, 4).contains("the embedding (E) is in stage 2, expected the first stage"));
        for bad in ["8,8,8,-8", "Et*8|t*8|t*8|t*8LL", "LEt*8|t*8|t*8|t*8"] {
            assert!(msg(bad, 32, 4).contains("\n  hint: "), "{bad}");
        }
    }
}
