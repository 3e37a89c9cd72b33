//! The spec's worked examples are the crate's output.

use parkline::RequestId;
use parkline::read::{ReadRequest, Selector};

use super::{child, push, read, since};
use crate::spec_blocks;

/// The worked examples of `spec/read.md` section 7 as the crate answers them: (example name,
/// text).
fn crate_examples() -> Vec<(&'static str, String)> {
    let mut examples = Vec::new();
    let mut small = child("s972-1");
    push(&mut small, 1, "first");
    push(&mut small, 2, "second");
    small.set_partial(Some("third, half done".into()));
    small.open_request(RequestId(7), "review").expect("new");
    let whole = since(&small, &small.start_cursor(), 2000);
    examples.push(("read-whole", whole.text));

    let mut c = child("s972-1");
    push(&mut c, 1, &"0123456789".repeat(30));
    push(&mut c, 2, "short answer");
    push(&mut c, 3, "another answer");
    c.set_partial(Some("working on step 4 of 9".into()));
    c.open_request(RequestId(7), "review").expect("new");
    let oversized = since(&c, &c.start_cursor(), 300);
    examples.push(("read-oversized", oversized.text.clone()));
    let next = oversized.next.clone().expect("cursor");
    let continued = since(&c, &next, 300);
    examples.push(("read-continue", continued.text.clone()));
    let again = since(&c, &continued.next.clone().expect("cursor"), 300);
    examples.push(("read-nothing-new", again.text.clone()));
    c.set_partial(Some("working on step 4 of 9; step 5 of 9".into()));
    let grown = since(&c, &again.next.clone().expect("cursor"), 300);
    examples.push(("read-grown", grown.text.clone()));
    c.set_partial(Some("step 4 failed, retrying".into()));
    let replaced = since(&c, &grown.next.clone().expect("cursor"), 300);
    examples.push(("read-replaced", replaced.text));
    c.set_partial(Some("working on step 4 of 9".into()));
    let rest = oversized.excerpt.and_then(|e| e.rest()).expect("rest");
    examples.push(("read-rest", read(&c, rest, 300).text));
    examples.push(("read-latest", read(&c, Selector::Latest { n: 1 }, 300).text));
    let error = c
        .read(&ReadRequest::new(Selector::Latest { n: 1 }, 100))
        .expect_err("too small");
    examples.push(("read-too-small", format!("{error}\n")));
    examples
}

/// R14: every worked example of `spec/read.md` section 7 is exactly what the crate answers.
/// With `PARKLINE_WRITE_SPEC=1` the examples in the spec are rewritten from the crate instead
/// (then review the diff: the spec is normative, the crate is not the authority).
#[test]
fn r14_the_spec_examples_are_the_crates_answers() {
    //= spec/read.md#r14-exact-response-text
    //= type=test
    //# The response text MUST be exactly as section 4 specifies, so that the caller (a model
    //# reading the text) and the tests see the same thing, and every window's text says what it
    //# holds, what it left out and where to continue.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/spec/read.md");
    let mut spec = std::fs::read_to_string(path).expect("spec/read.md");
    let write = std::env::var("PARKLINE_WRITE_SPEC").is_ok_and(|v| v == "1");
    for (name, text) in crate_examples() {
        if write {
            spec = spec_blocks::with_example("read.md", &spec, name, &text);
        } else {
            let old = spec_blocks::example_in("read.md", &spec, name);
            assert_eq!(text, old, "example {name}");
        }
    }
    if write {
        std::fs::write(path, spec).expect("write spec/read.md");
    }
}
