//! The `serde` feature: `Config` read from a daemon's config file (defaults for missing fields,
//! unknown fields and broken bounds refused), `Stats` written with its fsync histogram.

use crate::{Config, MemStorage, Queue, RequestId, Store, StoreOptions};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn config_reads_from_json_with_defaults_for_missing_fields() -> TestResult {
    let config: Config = serde_json::from_str(
        r#"{"failures_max": 5, "line_bytes_max": 4096, "rest_slack_bytes": 512}"#,
    )?;
    let expected = Config {
        failures_max: 5,
        line_bytes_max: 4096,
        rest_slack_bytes: 512,
        ..Config::default()
    };
    assert_eq!(config, expected);
    assert_eq!(serde_json::from_str::<Config>("{}")?, Config::default());
    Ok(())
}

#[test]
fn config_with_a_bound_not_kept_is_refused_with_validates_message() {
    for (json, message) in [
        (r#"{"failures_max": 0}"#, "failures_max must be at least 1"),
        (r#"{"repeats_max": 0}"#, "repeats_max must be at least 1"),
        (
            r#"{"line_bytes_max": 10, "group_bytes_max": 9}"#,
            "group_bytes_max must be at least line_bytes_max",
        ),
    ] {
        let refused = serde_json::from_str::<Config>(json).map(|_| ());
        let Err(e) = refused else {
            panic!("{json} was read");
        };
        assert!(e.to_string().contains(message), "{json}: {e}");
    }
}

#[test]
fn config_with_an_unknown_field_is_refused() {
    let Err(e) = serde_json::from_str::<Config>(r#"{"failure_max": 5}"#).map(|_| ()) else {
        panic!("a misspelt field was read");
    };
    assert!(e.to_string().contains("unknown field `failure_max`"), "{e}");
}

#[test]
fn stats_serialize_with_the_fsync_histogram_and_its_edges() -> TestResult {
    let mut queue = Queue::with_storage(MemStorage::new(), "m", Config::default())?;
    queue.park(RequestId(1), "done")?;
    let stats = queue.stats();
    let json = serde_json::to_value(&stats)?;
    assert_eq!(json["fsyncs"], 2);
    assert_eq!(json["dir_fsyncs"], 1);
    assert_eq!(json["parked"], 1);
    assert_eq!(json["mirror_bytes"], stats.mirror_bytes);
    let micros = u64::try_from(stats.fsync_max.as_micros())?;
    assert_eq!(
        json["fsync_max_us"], micros,
        "a number, the unit in its name: {json}"
    );
    assert!(json["fsync_last_us"].is_u64(), "{json}");
    assert!(json.get("fsync_max").is_none(), "{json}");
    assert!(json["oldest_parked_age_ms"].is_u64(), "{json}");
    assert!(
        json["oldest_dead_age_ms"].is_null(),
        "no dead letter: {json}"
    );
    let histogram = &json["fsync_durations"];
    assert_eq!(histogram["edges_us"][0], 16);
    assert_eq!(histogram["edges_us"][16], 1 << 20);
    let buckets = histogram["buckets"].as_array().ok_or("buckets")?;
    assert_eq!(buckets.len(), 18);
    let counted: u64 = buckets.iter().filter_map(serde_json::Value::as_u64).sum();
    assert_eq!(counted, 3);
    Ok(())
}

/// M16: a store's options read from a daemon's config file as `Config` is, and its figures
/// written for its metrics.
#[test]
fn store_options_read_and_store_stats_serialize() -> TestResult {
    let options: StoreOptions = serde_json::from_str(r#"{"max_open": 8}"#)?;
    assert_eq!(options, StoreOptions { max_open: 8 });
    assert_eq!(
        serde_json::from_str::<StoreOptions>("{}")?,
        StoreOptions::default()
    );
    let misspelt = serde_json::from_str::<StoreOptions>(r#"{"max_opened": 8}"#).map(|_| ());
    assert!(misspelt.is_err_and(|e| e.to_string().contains("unknown field `max_opened`")));
    let dir = tempfile::tempdir()?;
    let store = Store::open_with(dir.path(), options, Config::default())?;
    let _session = store.session("s1")?;
    let json = serde_json::to_value(store.stats())?;
    assert_eq!(
        (
            json["sessions_open"].as_u64(),
            json["descriptors_max"].as_u64()
        ),
        (Some(1), Some(8))
    );
    assert_eq!(
        json["sessions"]["dir_fsyncs"], 1,
        "the session's create: {json}"
    );
    assert!(json["sessions"]["fsync_max_us"].is_u64(), "{json}");
    Ok(())
}
