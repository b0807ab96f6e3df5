//! Pages a real registry sent (`testdata/registry/`), read whole, and mutated at random: no
//! mutation that leaves a file readable may cost that file or the page (issue 40).

use proptest::prelude::*;
use serde_json::{Value, json};
use wheelgate_resolver::index::{
    ProjectPage, parse_project_html, parse_project_json, render_project_html, render_project_json,
};
use wheelgate_testdata::registry::{CapturedPage, REGISTRY_PAGES};

fn parse(page: &CapturedPage) -> ProjectPage {
    let parsed = if page.is_json() {
        parse_project_json(page.body)
    } else {
        parse_project_html(page.body)
    };
    parsed.unwrap_or_else(|err| panic!("{} ({}): {err}", page.project, page.content_type))
}

/// (filename, sha256, requires-python, yanked) of every file, in page order.
fn facts(page: &ProjectPage) -> Vec<(String, Option<String>, Option<String>, bool)> {
    page.files
        .iter()
        .map(|file| {
            (
                file.filename.clone(),
                file.sha256().map(str::to_owned),
                file.requires_python.clone(),
                file.is_yanked(),
            )
        })
        .collect()
}

#[test]
fn every_captured_page_is_read_whole_and_both_forms_agree() {
    for page in &REGISTRY_PAGES {
        let parsed = parse(page);
        assert_eq!(parsed.files.len(), page.files, "{}", page.project);
        assert!(parsed.dropped.is_empty(), "{:?}", parsed.dropped);
        let yanked = parsed.files.iter().filter(|f| f.is_yanked()).count();
        assert_eq!(yanked, page.yanked, "{}", page.project);
        assert!(parsed.files.iter().all(|f| f.sha256().is_some()));
        // What the proxy writes back reads as the same files.
        let again = parse_project_json(&render_project_json(&parsed)).unwrap();
        assert_eq!(facts(&again), facts(&parsed));
        let again = parse_project_html(&render_project_html(&parsed)).unwrap();
        assert_eq!(facts(&again), facts(&parsed));
    }
    for pair in REGISTRY_PAGES.chunks(2) {
        let (json, html) = (parse(&pair[0]), parse(&pair[1]));
        let (mut from_json, mut from_html) = (facts(&json), facts(&html));
        from_json.sort();
        from_html.sort();
        assert_eq!(from_json, from_html, "{}", pair[0].project);
    }
    // The registry's own key, kept as it wrote it.
    let six = parse(&REGISTRY_PAGES[0]);
    assert_eq!(six.meta.last_serial, None);
    assert_eq!(six.meta.extra[0].0, "_last-serial");
    assert!(six.meta.extra[0].1.starts_with('"'));
}

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[ -~]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_-]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// What one mutation does to one `files[]` entry.
#[derive(Debug, Clone)]
enum Mutation {
    /// A key no PEP defines, of any type.
    UnknownKey(String, Value),
    /// A field only passed on (`size`, `upload-time`, ...) given any value.
    PassedOn(&'static str, Value),
    /// A field the proxy needs given a value of the wrong type: the entry must be dropped.
    Needed(&'static str, Value),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let passed_on = prop_oneof![
        Just("size"),
        Just("upload-time"),
        Just("provenance"),
        Just("gpg-sig"),
        Just("core-metadata"),
        Just("dist-info-metadata"),
        Just("data-dist-info-metadata"),
    ];
    let needed = prop_oneof![
        Just("filename"),
        Just("url"),
        Just("hashes"),
        Just("yanked"),
        Just("requires-python")
    ];
    prop_oneof![
        ("_?[a-z][a-z-]{0,10}", any_json())
            .prop_filter("not a key the reader knows", |(key, _)| !KNOWN
                .contains(&key.as_str()))
            .prop_map(|(key, value)| Mutation::UnknownKey(key, value)),
        (passed_on, any_json()).prop_map(|(key, value)| Mutation::PassedOn(key, value)),
        (
            needed,
            any_json().prop_filter("wrong type", |v| v.is_number() || v.is_array())
        )
            .prop_map(|(key, value)| Mutation::Needed(key, value)),
    ]
}

const KNOWN: [&str; 12] = [
    "filename",
    "url",
    "hashes",
    "yanked",
    "requires-python",
    "size",
    "upload-time",
    "provenance",
    "gpg-sig",
    "core-metadata",
    "dist-info-metadata",
    "data-dist-info-metadata",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Entries mutated in every way but one keep their file; those whose needed field was
    /// broken are dropped with a reason; the page itself is never refused; and `meta` may hold
    /// anything.
    #[test]
    fn no_mutation_that_leaves_a_file_readable_costs_it(
        page_at in prop_oneof![Just(0usize), Just(2usize)],
        mutations in proptest::collection::vec((any::<prop::sample::Index>(), mutation()), 0..12),
        meta_extra in proptest::collection::btree_map("_?[a-z-]{1,8}", any_json(), 0..3),
    ) {
        let captured = &REGISTRY_PAGES[page_at];
        let mut value: Value = serde_json::from_str(captured.body).unwrap();
        let entries = value["files"].as_array().unwrap().len();
        let mut broken = std::collections::BTreeSet::new();
        for (index, mutation) in &mutations {
            let at = index.index(entries);
            let entry = value["files"][at].as_object_mut().unwrap();
            match mutation {
                Mutation::UnknownKey(key, v) => { entry.insert(key.clone(), v.clone()); }
                Mutation::PassedOn(key, v) => { entry.insert((*key).to_owned(), v.clone()); }
                Mutation::Needed(key, v) => {
                    entry.insert((*key).to_owned(), v.clone());
                    broken.insert(at);
                }
            }
        }
        let meta = value["meta"].as_object_mut().unwrap();
        for (key, v) in &meta_extra {
            if key != "api-version" {
                meta.insert(key.clone(), v.clone());
            }
        }
        let text = serde_json::to_string(&value).unwrap();
        let page = parse_project_json(&text).unwrap();
        prop_assert_eq!(page.files.len() + page.dropped.len(), entries);
        prop_assert_eq!(page.dropped.len(), broken.len());
        let original = parse(captured);
        let kept: Vec<&str> = page.files.iter().map(|f| f.filename.as_str()).collect();
        let expected: Vec<&str> = original
            .files
            .iter()
            .enumerate()
            .filter(|(at, _)| !broken.contains(at))
            .map(|(_, f)| f.filename.as_str())
            .collect();
        prop_assert_eq!(kept, expected);
        // What is written back is read back the same.
        let again = parse_project_json(&render_project_json(&page)).unwrap();
        prop_assert_eq!(facts(&again), facts(&page));
    }

    /// HTML as servers write it differently: no doctype, upper-case hash names, other
    /// attributes, markup between the links. Every link is still read.
    #[test]
    fn html_variations_cost_no_link(
        page_at in prop_oneof![Just(1usize), Just(3usize)],
        no_doctype in any::<bool>(),
        upper_hash in any::<bool>(),
        attribute in "(class|id|rel|title|target|data-x-[a-z]{1,6})=\"[ -!#-~]{0,10}\"",
        junk in "(<!-- [a-z ]{0,10} -->|<br>|<p>|</p>|<span class=x>|</span>|[ \n]{0,3}|&amp;|&nbsp;){0,3}",
    ) {
        let captured = &REGISTRY_PAGES[page_at];
        let mut text = captured.body.to_owned();
        if no_doctype {
            text = text.replacen("<!DOCTYPE html>", "", 1);
        }
        if upper_hash {
            text = text.replace("#sha256=", "#SHA256=");
        }
        text = text.replace("<a href=", &format!("{junk}<a {attribute} href="));
        let page = parse_project_html(&text).unwrap();
        prop_assert_eq!(facts(&page), facts(&parse(captured)));
    }
}
