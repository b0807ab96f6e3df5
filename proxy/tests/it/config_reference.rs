//! The configuration reference in the docs is the code's: `docs/src/configuration.md` must be
//! exactly what `wheelgate config reference` prints, so a key, a default or a doc comment that
//! changes without the page fails here.

use std::path::Path;

use wheelgate::cli::config_reference::{PAGE, REGENERATE, markdown};

#[test]
fn the_checked_in_configuration_reference_is_generated_from_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(PAGE);
    let checked_in = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}; run `{REGENERATE}`", path.display()));
    let generated = markdown();
    if checked_in != generated {
        let line = checked_in
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || checked_in.lines().count().min(generated.lines().count()) + 1,
                |i| i + 1,
            );
        let want = generated.lines().nth(line - 1).unwrap_or("(end of page)");
        let have = checked_in.lines().nth(line - 1).unwrap_or("(end of page)");
        panic!(
            "{PAGE} differs from the configuration reference the code generates, first at line \
             {line}:\n  checked in: {have}\n  generated:  {want}\n\
             Regenerate it from the repository's root with:\n  {REGENERATE}"
        );
    }
}
