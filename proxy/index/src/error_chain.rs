//! One line of text for an error's causes, for log fields (the `Display` of an error says what
//! failed; the chain says why, down to the OS or HTTP error).

/// The causes of `error`, outermost first, joined with `: ` (empty when it has none).
pub fn source_chain(error: &dyn std::error::Error) -> String {
    let mut parts = Vec::new();
    let mut source = error.source();
    while let Some(cause) = source {
        parts.push(cause.to_string());
        source = cause.source();
    }
    parts.join(": ")
}

/// `error` itself, then its causes: the whole story in one line, for a message that has room
/// for only one.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let causes = source_chain(error);
    if causes.is_empty() {
        error.to_string()
    } else {
        format!("{error}: {causes}")
    }
}

#[cfg(test)]
mod tests {
    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn joins_causes_outermost_first() {
        let error = Outer(std::io::Error::other("disk full"));
        assert_eq!(super::source_chain(&error), "disk full");
        assert_eq!(super::source_chain(&std::io::Error::other("x")), "");
        assert_eq!(super::with_causes(&error), "outer: disk full");
    }
}
