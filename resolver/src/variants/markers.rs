//! PEP 817's `variant_label` environment marker, decided for one chosen variant, so that a plain
//! installer can read the core metadata of a variant wheel.
//!
//! PyTorch's variant wheels carry requirements such as
//! `Requires-Dist: nvidia-cublas-cu12==12.8.4.1; variant_label == 'cuda12.8'`. Released pip and
//! uv reject the unknown marker variable (pip: "Expected a marker variable or quoted string").
//! Once the proxy has chosen the label, every `variant_label` comparison has a known answer:
//! it is replaced by a marker every installer evaluates to the same answer
//! (`python_version >= "0"` for true, `python_version < "0"` for false). Comparing two string
//! literals would be shorter, but `packaging` refuses to evaluate that.

/// A marker every installer evaluates to true.
const TRUE: &str = "python_version >= \"0\"";
/// A marker every installer evaluates to false.
const FALSE: &str = "python_version < \"0\"";
const VARIABLE: &str = "variant_label";

/// `metadata` (a `METADATA` or PEP 658 `.metadata` file) with every `variant_label` comparison
/// in a `Requires-Dist` marker decided for `label`. Other lines are unchanged; a comparison this
/// function cannot read is left as it is (an installer then reports it).
pub fn decide_variant_label(metadata: &str, label: &str) -> String {
    let mut out = String::with_capacity(metadata.len());
    for line in metadata.split_inclusive('\n') {
        let is_requirement = line
            .get(..14)
            .is_some_and(|head| head.eq_ignore_ascii_case("requires-dist:"));
        match line.split_once(';') {
            Some((requirement, marker)) if is_requirement && marker.contains(VARIABLE) => {
                out.push_str(requirement);
                out.push(';');
                out.push_str(&decide_marker(marker, label));
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// One marker expression with its `variant_label` comparisons replaced.
fn decide_marker(marker: &str, label: &str) -> String {
    let mut out = String::with_capacity(marker.len());
    let mut rest = marker;
    while let Some(at) = find_variable(rest) {
        let (before, after) = rest.split_at(at);
        let after = &after[VARIABLE.len()..];
        // `variant_label <op> 'text'`
        if let Some((op, text, tail)) = op_then_string(after) {
            out.push_str(before);
            out.push_str(if compare(label, op, text) {
                TRUE
            } else {
                FALSE
            });
            rest = tail;
            continue;
        }
        // `'text' <op> variant_label`
        if let Some((start, op, text)) = string_then_op(before) {
            out.push_str(&before[..start]);
            out.push_str(if compare_reversed(text, op, label) {
                TRUE
            } else {
                FALSE
            });
            rest = after;
            continue;
        }
        out.push_str(before);
        out.push_str(VARIABLE);
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The byte offset of `variant_label` as a whole word outside quotes.
fn find_variable(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if bytes[i..].starts_with(VARIABLE.as_bytes()) => {
                let word =
                    |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
                let before = if i == 0 { None } else { bytes.get(i - 1) };
                if !word(before) && !word(bytes.get(i + VARIABLE.len())) {
                    return Some(i);
                }
            }
            // Inside quotes, or any other byte outside them.
            _ => {}
        }
        i += 1;
    }
    None
}

const OPS: [&str; 4] = ["not in", "==", "!=", "in"];

/// `<op> 'text'` at the start of `text` (after spaces): the operator, the string, the rest.
fn op_then_string(text: &str) -> Option<(&'static str, &str, &str)> {
    let trimmed = text.trim_start();
    let op = OPS.iter().find(|op| trimmed.starts_with(**op))?;
    let after_op = trimmed[op.len()..].trim_start();
    let quote = after_op
        .chars()
        .next()
        .filter(|c| *c == '\'' || *c == '"')?;
    let end = after_op[1..].find(quote)? + 1;
    Some((op, &after_op[1..end], &after_op[end + 1..]))
}

/// `'text' <op>` at the end of `text` (before spaces): where the string starts, the operator,
/// the string.
fn string_then_op(text: &str) -> Option<(usize, &'static str, &str)> {
    let trimmed = text.trim_end();
    let op = OPS.iter().find(|op| trimmed.ends_with(**op))?;
    let before_op = trimmed[..trimmed.len() - op.len()].trim_end();
    let quote = before_op
        .chars()
        .last()
        .filter(|c| *c == '\'' || *c == '"')?;
    let start = before_op[..before_op.len() - 1].rfind(quote)?;
    Some((start, op, &before_op[start + 1..before_op.len() - 1]))
}

/// `label <op> text`, with PEP 508's string semantics (`in` is a substring test).
fn compare(label: &str, op: &str, text: &str) -> bool {
    match op {
        "==" => label == text,
        "!=" => label != text,
        "in" => text.contains(label),
        _ => !text.contains(label),
    }
}

/// `text <op> label`.
fn compare_reversed(text: &str, op: &str, label: &str) -> bool {
    match op {
        "==" => label == text,
        "!=" => label != text,
        "in" => label.contains(text),
        _ => !label.contains(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decides_every_form_of_comparison() {
        let metadata = "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n\
Requires-Dist: filelock\n\
Requires-Dist: nvidia-cublas-cu12==12.8.4.1; variant_label == 'cuda12.8'\n\
Requires-Dist: nvidia-cublas==13.0.0; variant_label == \"cuda13.0\" and platform_system == 'Linux'\n\
Requires-Dist: pytorch-triton-rocm; 'rocm' in variant_label\n\
Requires-Dist: intel-extras; variant_label != 'xpu'\n\
Requires-Dist: odd; variant_label in 'cuda12.8 cuda12.6'\n\
Requires-Dist: keep-me; extra == 'variant_label'\n";
        let decided = decide_variant_label(metadata, "cuda12.8");
        let lines: Vec<&str> = decided.lines().collect();
        assert_eq!(lines[3], "Requires-Dist: filelock");
        assert_eq!(
            lines[4],
            "Requires-Dist: nvidia-cublas-cu12==12.8.4.1; python_version >= \"0\""
        );
        assert_eq!(
            lines[5],
            "Requires-Dist: nvidia-cublas==13.0.0; python_version < \"0\" and platform_system == 'Linux'"
        );
        assert_eq!(
            lines[6],
            "Requires-Dist: pytorch-triton-rocm; python_version < \"0\""
        );
        assert_eq!(
            lines[7],
            "Requires-Dist: intel-extras; python_version >= \"0\""
        );
        assert_eq!(lines[8], "Requires-Dist: odd; python_version >= \"0\"");
        // A quoted `variant_label` is a string, not the variable.
        assert_eq!(lines[9], "Requires-Dist: keep-me; extra == 'variant_label'");
        assert!(!decided.contains("variant_label =="));
    }

    #[test]
    fn garbage_is_left_as_it_is() {
        for marker in [
            "Requires-Dist: a; variant_label\n",
            "Requires-Dist: a; variant_label == \n",
            "Requires-Dist: a; variant_label == 'unterminated\n",
            "Requires-Dist: a; variant_labels == 'x'\n",
            "Requires-Dist: a; ;;; variant_label\u{0}'\n",
            "Requires-Dist: a; 'é' ≠ variant_label é\n",
        ] {
            assert_eq!(decide_variant_label(marker, "null"), marker);
        }
        assert_eq!(decide_variant_label("", "null"), "");
    }
}
