//! A page body decoded as UTF-8 while it arrives: the fetch builds its text chunk by chunk
//! instead of validating it whole at the end, and the index cache's reader (which parses an HTML
//! page as it arrives) takes the text so far at each step.

/// The text of a body so far.
pub struct ArrivingText {
    text: String,
    /// The first bytes of a character split between two chunks (at most three).
    pending: Vec<u8>,
    /// The raw bytes, once they are not UTF-8: from then on only collected, and made text at the
    /// end the way `String::from_utf8_lossy` makes it.
    broken: Option<Vec<u8>>,
}

impl ArrivingText {
    pub fn with_capacity(capacity: usize) -> ArrivingText {
        ArrivingText {
            text: String::with_capacity(capacity),
            pending: Vec::new(),
            broken: None,
        }
    }

    /// Bytes received so far.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        match &self.broken {
            Some(bytes) => bytes.len(),
            None => self.text.len() + self.pending.len(),
        }
    }

    /// The body's text so far, while it is valid UTF-8 (a split character's first bytes held
    /// back); `None` once it is not.
    pub fn so_far(&self) -> Option<&str> {
        self.broken.is_none().then_some(self.text.as_str())
    }

    pub fn push(&mut self, mut chunk: &[u8]) {
        if let Some(bytes) = &mut self.broken {
            bytes.extend_from_slice(chunk);
            return;
        }
        // A character split between chunks: its bytes one at a time, until it decodes.
        while !self.pending.is_empty() {
            let Some((&byte, rest)) = chunk.split_first() else {
                return;
            };
            self.pending.push(byte);
            chunk = rest;
            match std::str::from_utf8(&self.pending) {
                Ok(character) => {
                    self.text.push_str(character);
                    self.pending.clear();
                }
                Err(err) if err.error_len().is_none() && self.pending.len() < 4 => {}
                Err(_) => return self.break_off(chunk),
            }
        }
        match std::str::from_utf8(chunk) {
            Ok(text) => self.text.push_str(text),
            Err(err) => {
                let (valid, rest) = chunk.split_at(err.valid_up_to());
                if let Ok(valid) = std::str::from_utf8(valid) {
                    self.text.push_str(valid);
                }
                if err.error_len().is_none() {
                    self.pending.extend_from_slice(rest);
                } else {
                    self.break_off(rest);
                }
            }
        }
    }

    /// The bytes are not UTF-8: kept raw from here on.
    fn break_off(&mut self, rest: &[u8]) {
        let mut bytes = std::mem::take(&mut self.text).into_bytes();
        bytes.append(&mut self.pending);
        bytes.extend_from_slice(rest);
        self.broken = Some(bytes);
    }

    /// The whole body as text; bytes that are not UTF-8 become U+FFFD, as
    /// `String::from_utf8_lossy` makes them (a page of garbage then fails to parse, or lists
    /// nothing).
    pub fn finish(self) -> String {
        match self.broken {
            None if self.pending.is_empty() => self.text,
            None => {
                let mut bytes = self.text.into_bytes();
                bytes.extend_from_slice(&self.pending);
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ArrivingText;

    /// `bytes` pushed in chunks of `size`: the text so far at each step must be a prefix of the
    /// lossy decoding, and the end must be exactly it.
    fn check(bytes: &[u8], size: usize) {
        let whole = String::from_utf8_lossy(bytes).into_owned();
        let mut text = ArrivingText::with_capacity(0);
        for chunk in bytes.chunks(size.max(1)) {
            text.push(chunk);
            if let Some(so_far) = text.so_far() {
                assert!(
                    whole.starts_with(so_far),
                    "{so_far:?} is not a prefix of {whole:?}"
                );
            }
        }
        assert_eq!(text.len(), bytes.len());
        assert_eq!(text.finish(), whole, "chunks of {size}: {bytes:?}");
    }

    #[test]
    fn any_chunking_decodes_as_the_whole_body_does() {
        let samples: [&[u8]; 6] = [
            "Links for pé — torch 🔥 <a>".as_bytes(),
            b"plain ascii",
            b"bad \xff byte then \xc3\xa9",
            b"cut at the end \xe2\x82",
            b"\xf0\x9f\x94",
            b"overlong \xc0\xaf and lone \x80 continuation",
        ];
        for sample in samples {
            for size in 1..=sample.len() {
                check(sample, size);
            }
        }
    }

    #[test]
    fn valid_text_stays_readable_and_broken_text_stops_being_offered() {
        let mut text = ArrivingText::with_capacity(0);
        text.push("é".as_bytes().split_at(1).0);
        assert_eq!(text.so_far(), Some(""));
        text.push(&[0xa9, b'x']);
        assert_eq!(text.so_far(), Some("éx"));
        text.push(b"\xff");
        assert_eq!(text.so_far(), None);
        assert_eq!(text.finish(), "éx\u{fffd}");
    }
}
