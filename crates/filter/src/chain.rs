//! Long chains of one connective (`host a or host b or …`, `not port 1 and not port 2
//! and …`), compiled in pieces.
//!
//! libpcap's optimiser takes time far beyond linear in the size of the program: on the
//! machine this was written on, 32 `host` terms joined by `or` compile in a few
//! milliseconds, 400 in 5 s and 1,000 in about 2 minutes. A filter that lists addresses
//! or ports is exactly such a chain. Its top level is `t1 or t2 or … or tn` (libpcap
//! gives `and` and `or` the same precedence and groups from the left), which accepts a
//! packet when any term does, and so when any run of consecutive terms does. Such an
//! expression is cut into pieces of [`TERMS_PER_PIECE`] terms, libpcap compiles and
//! optimises each piece, and the programs are joined: in an `or` chain a piece's
//! `ret #0` becomes a jump to the next piece, in an `and` chain its accepting return
//! does. The result runs the same tests as the whole, in the same order.
//!
//! A cut is made only where it cannot change the meaning:
//! - never in an expression that uses `vlan`, `mpls`, `pppoes`, `geneve` or `vxlan`
//!   (each moves the offsets every later term reads, whatever piece it is in);
//! - only before a term that starts (after `not`, `!` and opening parentheses) with a
//!   keyword: a term that starts with a bare value inherits the qualifiers of the term
//!   before it (`host a or b` means `host a or host b`), so it stays in that term's piece
//!   (libpcap's grammar would refuse a piece that starts with one);
//! - never inside the qualifier `src or dst` (or `src and dst`).
//!
//! Anything this reading does not follow (mixed connectives, an unbalanced parenthesis,
//! an empty term) is compiled whole, as are chains of at most [`TERMS_PER_PIECE`] terms,
//! whose programs are then exactly libpcap's, and any chain with a piece that libpcap
//! refuses (see [`crate::libpcap::compile`]).

use crate::program::{Insn, op};

/// Terms compiled together: libpcap optimises this many in a few milliseconds.
pub(crate) const TERMS_PER_PIECE: usize = 32;

/// The connective of a chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Connective {
    Or,
    And,
}

/// Words that start a term with qualifiers of its own (a primitive, a protocol, an
/// arithmetic expression on a protocol's bytes). Other libpcap keywords exist; a term
/// starting with one of them is merely kept in the piece before it.
const FRESH_START: &[&str] = &[
    "host",
    "net",
    "port",
    "portrange",
    "src",
    "dst",
    "gateway",
    "proto",
    "ether",
    "ip",
    "ip6",
    "arp",
    "rarp",
    "tcp",
    "udp",
    "icmp",
    "icmp6",
    "igmp",
    "sctp",
    "broadcast",
    "multicast",
    "less",
    "greater",
    "len",
];

/// Words that change how every later term finds its headers.
const STATEFUL: &[&str] = &["vlan", "mpls", "pppoes", "geneve", "vxlan"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str),
    Open,
    Close,
    Not,
    Connective(Connective),
    /// Any other operator (`<`, `!=`, `&`, `+`, …).
    Other,
}

/// The tokens of `expr` with their byte ranges, as far as cutting needs them; `None` for
/// text this reading does not follow.
fn tokens(expr: &str) -> Option<Vec<(Token<'_>, usize, usize)>> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let two = b.get(i..i + 2);
        let token = if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if two == Some(b"&&") {
            i += 2;
            Token::Connective(Connective::And)
        } else if two == Some(b"||") {
            i += 2;
            Token::Connective(Connective::Or)
        } else if two == Some(b"!=") {
            i += 2;
            Token::Other
        } else if c == b'!' {
            i += 1;
            Token::Not
        } else if c == b'(' || c == b'[' {
            i += 1;
            Token::Open
        } else if c == b')' || c == b']' {
            i += 1;
            Token::Close
        } else if b"&|<>=+*/%^".contains(&c) {
            i += 1;
            Token::Other
        } else {
            // A word: libpcap's names, numbers and addresses (letters, digits, `.`, `-`,
            // `:`, `_`), or a backslash-escaped name, which runs to a space, `!` or a
            // parenthesis and is never a keyword.
            let escaped = c == b'\\';
            i += 1;
            while i < b.len() {
                let c = b[i];
                let ends = if escaped {
                    c.is_ascii_whitespace() || b"!()".contains(&c)
                } else {
                    c.is_ascii_whitespace() || b"!()[]&|<>=+*/%^\\".contains(&c)
                };
                if ends {
                    break;
                }
                i += 1;
            }
            let word = &expr[start..i];
            match word {
                _ if escaped => Token::Other,
                "or" => Token::Connective(Connective::Or),
                "and" => Token::Connective(Connective::And),
                "not" => Token::Not,
                _ => Token::Word(word),
            }
        };
        out.push((token, start, i));
    }
    Some(out)
}

/// Whether a term (its tokens) starts with qualifiers of its own.
fn starts_fresh(term: &[(Token<'_>, usize, usize)]) -> bool {
    match term
        .iter()
        .map(|t| t.0)
        .find(|t| !matches!(t, Token::Not | Token::Open))
    {
        Some(Token::Word(w)) => FRESH_START.contains(&w),
        _ => false,
    }
}

/// The pieces of `expr` (substrings, in order) and their connective, when `expr` is a
/// chain of more than [`TERMS_PER_PIECE`] terms that can be cut safely (see the module
/// documentation); `None` when it is to be compiled whole.
pub(crate) fn pieces(expr: &str) -> Option<(Connective, Vec<&str>)> {
    let tokens = tokens(expr)?;
    let mut connective = None;
    let mut depth = 0usize;
    // The terms, as ranges of token indices.
    let mut terms = Vec::new();
    let mut term_start = 0;
    for (i, (token, _, _)) in tokens.iter().enumerate() {
        match *token {
            Token::Word(w) if STATEFUL.contains(&w) => return None,
            Token::Open => depth += 1,
            Token::Close => depth = depth.checked_sub(1)?,
            Token::Connective(c) if depth == 0 => {
                if *connective.get_or_insert(c) != c || i == term_start {
                    return None;
                }
                terms.push(term_start..i);
                term_start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 || term_start == tokens.len() {
        return None;
    }
    terms.push(term_start..tokens.len());
    if terms.len() <= TERMS_PER_PIECE {
        return None;
    }
    // Group the terms: a piece is full at TERMS_PER_PIECE terms, and the next one starts
    // at the first term after that which starts fresh.
    let text = |first: &std::ops::Range<usize>, last: &std::ops::Range<usize>| {
        &expr[tokens[first.start].1..tokens[last.end - 1].2]
    };
    let mut pieces = Vec::new();
    let mut first = 0;
    for (i, term) in terms.iter().enumerate().skip(1) {
        // `src or dst host a` and `src and dst …` are one qualifier, not two terms.
        let split_qualifier = matches!(
            tokens[terms[i - 1].clone()],
            [(Token::Word("src" | "dst"), _, _)]
        );
        if i - first >= TERMS_PER_PIECE && !split_qualifier && starts_fresh(&tokens[term.clone()]) {
            pieces.push(text(&terms[first], &terms[i - 1]));
            first = i;
        }
    }
    pieces.push(text(&terms[first], &terms[terms.len() - 1]));
    (pieces.len() > 1).then_some((connective?, pieces))
}

/// Joins the programs of a chain's pieces into one program (see the module
/// documentation); `None` if a piece other than the last returns the accumulator, which
/// has no fixed verdict to redirect.
pub(crate) fn join(connective: Connective, pieces: Vec<Vec<Insn>>) -> Option<Vec<Insn>> {
    const RET_K: u16 = op::RET;
    const RET_A: u16 = op::RET | 0x10;
    let total = pieces.iter().map(Vec::len).sum();
    let last = pieces.len().checked_sub(1)?;
    let mut out: Vec<Insn> = Vec::with_capacity(total);
    for (i, piece) in pieces.into_iter().enumerate() {
        let next = out.len() + piece.len();
        for insn in piece {
            let passes_on = i < last
                && match (insn.code, connective) {
                    (RET_A, _) => return None,
                    (RET_K, Connective::Or) => insn.k == 0,
                    (RET_K, Connective::And) => insn.k != 0,
                    _ => false,
                };
            if passes_on {
                let skip = u32::try_from(next - out.len() - 1).ok()?;
                out.push(Insn::new(op::JMP, 0, 0, skip));
            } else {
                out.push(insn);
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(word: &str, n: usize, join: &str) -> String {
        (0..n)
            .map(|i| format!("{word} 10.0.{}.{}", i / 256, i % 256))
            .collect::<Vec<_>>()
            .join(join)
    }

    #[test]
    fn short_and_mixed_chains_are_compiled_whole() {
        assert_eq!(pieces(&chain("host", TERMS_PER_PIECE, " or ")), None);
        assert_eq!(pieces("tcp or udp and port 53"), None);
        let mixed = format!("{} and tcp", chain("host", 100, " or "));
        assert_eq!(pieces(&mixed), None);
        // the whole chain inside parentheses is one term
        assert_eq!(pieces(&format!("({})", chain("host", 100, " or "))), None);
    }

    #[test]
    fn long_chains_are_cut_into_pieces_that_cover_every_term() {
        for (join, connective) in [
            (" or ", Connective::Or),
            (" || ", Connective::Or),
            (" and ", Connective::And),
            ("&&", Connective::And),
        ] {
            let expr = chain("src host", 100, join);
            let (c, p) = pieces(&expr).unwrap();
            assert_eq!(c, connective);
            assert_eq!(p.len(), 4, "{join}");
            assert_eq!(p.join(join), expr);
            assert!(p[0].starts_with("src host 10.0.0.0") && p[3].ends_with("10.0.0.99"));
        }
    }

    #[test]
    fn a_term_that_inherits_qualifiers_stays_with_the_term_before() {
        // `port 1 or 2 or 3 …`: every bare number is a port of the first term's kind.
        let bare: Vec<String> = (1..100).map(|i| i.to_string()).collect();
        assert_eq!(pieces(&format!("port 0 or {}", bare.join(" or "))), None);
        // Cut only before the terms that name their own kind, wherever they are.
        let mut terms = Vec::new();
        for i in 0..100 {
            terms.push(if i % 10 == 0 {
                format!("tcp port {i}")
            } else if i % 3 == 0 {
                format!("not (({i}))")
            } else {
                i.to_string()
            });
        }
        let expr = terms.join(" or ");
        let (_, p) = pieces(&expr).unwrap();
        assert_eq!(p.join(" or "), expr);
        for piece in &p {
            assert!(piece.starts_with("tcp port"), "{piece}");
        }
        assert_eq!(p.len(), 3);
        // `src or dst host a` is one term: no cut inside the qualifier (each counts as
        // two terms towards a piece's 32, so 100 of them make 7 pieces).
        let either = chain("src or dst host", 100, " or ");
        let (_, p) = pieces(&either).unwrap();
        assert!(
            p.iter().all(|piece| piece.starts_with("src or dst host")),
            "{p:?}"
        );
        assert_eq!(p.len(), 7);
        // `not` and parentheses in front of a keyword still start fresh.
        let negated = chain("not (host", 100, ") and ") + ")";
        assert_eq!(pieces(&negated).unwrap().1.len(), 4);
    }

    #[test]
    fn offset_changing_keywords_prevent_any_cut() {
        for word in STATEFUL {
            let expr = format!("{word} and ({})", chain("host", 100, " or "));
            assert_eq!(pieces(&expr), None);
            let expr = format!("{} or {word}", chain("host", 100, " or "));
            assert_eq!(pieces(&expr), None, "{word}");
        }
    }

    #[test]
    fn odd_text_is_left_to_libpcap() {
        let long = chain("host", 100, " or ");
        for bad in [
            format!("{long} or"),
            format!("or {long}"),
            format!("{long} or or host 1.2.3.4"),
            format!("{long})"),
            format!("({long}"),
        ] {
            assert_eq!(pieces(&bad), None, "{bad}");
        }
        // `!=` and arithmetic are not connectives; an escaped `\or` is a name
        let arith: Vec<String> = (0..100).map(|i| format!("ip[0] & 0xf != {i}")).collect();
        assert_eq!(pieces(&arith.join(" or ")).unwrap().1.len(), 4);
        assert_eq!(tokens("host \\or").unwrap()[1].0, Token::Other);
    }

    #[test]
    fn joining_redirects_the_verdicts_that_pass_on() {
        let accept = Insn::new(0x06, 0, 0, 65535);
        let reject = Insn::new(0x06, 0, 0, 0);
        let test = Insn::new(0x15, 0, 1, 7); // jeq #7
        let piece = vec![test, accept, reject];
        let or = join(
            Connective::Or,
            vec![piece.clone(), piece.clone(), piece.clone()],
        )
        .unwrap();
        assert_eq!(or.len(), 9);
        assert_eq!(or[2], Insn::new(op::JMP, 0, 0, 0)); // to instruction 3
        assert_eq!(or[5], Insn::new(op::JMP, 0, 0, 0));
        assert_eq!(
            (or[1], or[4], or[7], or[8]),
            (accept, accept, accept, reject)
        );
        let and = join(Connective::And, vec![piece.clone(), piece.clone()]).unwrap();
        assert_eq!(and[1], Insn::new(op::JMP, 0, 0, 1)); // over the reject, to 3
        assert_eq!((and[2], and[4], and[5]), (reject, accept, reject));
        let ret_a = vec![Insn::new(0x16, 0, 0, 0)];
        assert_eq!(
            join(Connective::Or, vec![ret_a.clone(), piece.clone()]),
            None
        );
        assert!(join(Connective::Or, vec![piece, ret_a]).is_some());
    }
}
