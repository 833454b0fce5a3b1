// Confluent Rust client (crate confluent-kafka) peer for the kconsume benchmark (perf/run).
// Reads a topic from its beginning until it has seen the record count perf/run counted in the
// topic (-n), touching every value (its bytes are summed in the value deserializer, so nothing
// can skip decoding and no value is copied), and prints one JSON line like the other peers.
//
//   rust_consume -b BROKERS -t TOPIC -n RECORDS [-m group|assign] [-L LINGER-S] [-l [-D] [-W W]]
//
// group: subscribe in a fresh KIP-848 group (group.protocol=consumer: the client has no classic
// protocol). assign: every partition assigned by the client, no group. The clock runs from
// client creation to the poll that delivers the last record (group join included, as for
// librdkafka and franz-go). -L keeps polling idle for that many seconds after the end (T3) and
// prints the process's CPU over that idle time as idle_cpu_pct (T4); first_all_s is the time from
// client creation until every partition delivered a record. -l (latency): the topic is being
// produced; for each of the -n records, poll time - CreateTime, reported as p50/p99/p99.9, with
// fetch.min.bytes 1 and fetch.max.wait.ms 10, or with -D the client's own fetch settings; -W W
// leaves the first W records (the producer's warm-up) out of the percentiles.
//
// Threads: the client runs its network task on the tokio runtime's threads; this program's main
// task polls, and the deserializer (where values are touched) runs inside poll.
use confluent_kafka::common::serialization::Deserializer;
use confluent_kafka::common::{Error, Metric, TopicPartition};
use confluent_kafka::consumer::{Consumer, ConsumerConfig, KafkaConsumer};
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The same sum as perf/peers/touch.h (perf_value_sum): every byte, eight at a time as four
/// 16-bit lanes accumulated over at most 128 words, then folded.
fn value_sum(v: &[u8]) -> u64 {
    const EVEN: u64 = 0x00ff_00ff_00ff_00ff;
    const LO16: u64 = 0x0000_ffff_0000_ffff;
    let mut total = 0u64;
    let mut chunks = v.chunks_exact(8);
    loop {
        let mut acc = 0u64;
        let mut k = 0;
        while k < 128 {
            match chunks.next() {
                Some(c) => {
                    let w = u64::from_le_bytes(c.try_into().unwrap());
                    acc += (w & EVEN) + ((w >> 8) & EVEN);
                    k += 1;
                }
                None => break,
            }
        }
        if k == 0 {
            break;
        }
        acc = (acc & LO16) + ((acc >> 16) & LO16);
        total += (acc & 0xffff_ffff) + (acc >> 32);
        if k < 128 {
            break;
        }
    }
    total + chunks.remainder().iter().map(|&b| b as u64).sum::<u64>()
}

/// A value's (length, byte sum): the value is read where the client holds it, never copied.
struct Touch;
impl Deserializer<(u64, u64)> for Touch {
    fn deserialize<'a>(
        &'a self,
        _topic: &'a str,
        data: &'a [u8],
    ) -> impl std::future::Future<Output = Result<(u64, u64), Error>> + Send + 'a {
        std::future::ready(Ok((data.len() as u64, value_sum(data))))
    }
}

/// Keys are not read (the benchmark's records have none).
struct NoKey;
impl Deserializer<()> for NoKey {
    fn deserialize<'a>(
        &'a self,
        _topic: &'a str,
        _data: &'a [u8],
    ) -> impl std::future::Future<Output = Result<(), Error>> + Send + 'a {
        std::future::ready(Ok(()))
    }
}

/// The confluent-kafka version this binary was built with, from the committed Cargo.lock.
fn client_version() -> &'static str {
    let lock = include_str!("../Cargo.lock");
    let mut it = lock.lines();
    while let Some(l) = it.next() {
        if l == "name = \"confluent-kafka\"" {
            if let Some(v) = it.next().and_then(|v| v.strip_prefix("version = \"")) {
                return v.trim_end_matches('"');
            }
        }
    }
    "?"
}

/// User+system CPU seconds of the whole process, from /proc/self/stat (utime and stime, the 14th
/// and 15th fields, in USER_HZ = 100 ticks per second on Linux).
fn process_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

fn die(what: &str, e: impl std::fmt::Debug) -> ! {
    eprintln!("rust_consume: {what}: {e:?}");
    std::process::exit(1)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (mut brokers, mut topic, mut mode) = (
        "127.0.0.1:9092".to_string(),
        String::new(),
        "group".to_string(),
    );
    let (mut want, mut linger) = (0u64, 0f64);
    let (mut latency, mut client_defaults, mut warmup) = (false, false, 0usize);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .unwrap_or_else(|| die("usage", format!("{a} needs a value")))
        };
        match a.as_str() {
            "-b" => brokers = val(),
            "-t" => topic = val(),
            "-m" => mode = val(),
            "-n" => want = val().parse().unwrap_or_else(|e| die("-n", e)),
            "-L" => linger = val().parse().unwrap_or_else(|e| die("-L", e)),
            "-l" => latency = true,
            "-D" => client_defaults = true,
            "-W" => warmup = val().parse().unwrap_or_else(|e| die("-W", e)),
            _ => die(
                "usage",
                "-b BROKERS -t TOPIC -n RECORDS [-m group|assign] [-L SECONDS] [-l [-D] [-W W]]",
            ),
        }
    }
    if topic.is_empty() || want == 0 || (mode != "group" && mode != "assign") {
        die(
            "usage",
            "-b BROKERS -t TOPIC -n RECORDS [-m group|assign] [-L SECONDS] [-l [-D] [-W W]]",
        );
    }
    let now_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros();
    // The same fetch settings as the librdkafka and Java peers (perf/README.md).
    let mut props: HashMap<String, String> = [
        ("bootstrap.servers", brokers.as_str()),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
        ("fetch.min.bytes", "1048576"),
        ("fetch.max.wait.ms", "100"),
        ("fetch.max.bytes", "52428800"),
        ("max.partition.fetch.bytes", "8388608"),
        ("max.poll.records", "10000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    if latency {
        // Latency: answer as soon as anything is there; -D: the client's own fetch settings.
        for k in [
            "fetch.min.bytes",
            "fetch.max.wait.ms",
            "fetch.max.bytes",
            "max.partition.fetch.bytes",
        ] {
            props.remove(k);
        }
        if !client_defaults {
            props.insert("fetch.min.bytes".into(), "1".into());
            props.insert("fetch.max.wait.ms".into(), "10".into());
        }
    }
    // The client refuses the classic protocol even without a group (assign mode).
    props.insert("group.protocol".into(), "consumer".into());
    if mode == "group" {
        props.insert(
            "group.id".into(),
            format!("perf-rust-{}-{now_us}", std::process::id()),
        );
    }
    let cfg = ConsumerConfig::new(&props).unwrap_or_else(|e| die("config", e));

    let t0 = Instant::now();
    let mut c: KafkaConsumer<(), (u64, u64)> =
        KafkaConsumer::new(cfg, NoKey, Touch).unwrap_or_else(|e| die("consumer", e));
    let parts = c
        .partitions_for(&topic)
        .await
        .unwrap_or_else(|e| die("partitions", e));
    let nparts = parts.len();
    if mode == "group" {
        c.subscribe_with_topics(vec![topic.clone()])
            .await
            .unwrap_or_else(|e| die("subscribe", e));
    } else {
        let tps = parts
            .iter()
            .map(|p| TopicPartition::new(topic.as_str(), p.partition()))
            .collect();
        c.assign(tps).await.unwrap_or_else(|e| die("assign", e));
    }
    let (mut records, mut bytes, mut sum, mut polls) = (0u64, 0u64, 0u64, 0u64);
    let mut last_data = Instant::now();
    let mut seen: HashMap<i32, ()> = HashMap::new();
    let mut first_all = None;
    let mut lat_us: Vec<i64> = Vec::with_capacity(if latency { want as usize } else { 0 });
    while records < want {
        let recs = c
            .poll(Duration::from_millis(1000))
            .await
            .unwrap_or_else(|e| die("poll", e));
        polls += 1;
        if recs.is_empty() {
            if last_data.elapsed() > Duration::from_secs(120) {
                die(
                    "poll",
                    format!("no record for 120 s after {records} of {want}"),
                );
            }
            continue;
        }
        last_data = Instant::now();
        let now_us = if latency {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_micros() as i64
        } else {
            0
        };
        for r in &recs {
            if latency && (lat_us.len() as u64) < want {
                lat_us.push(now_us - r.timestamp() * 1000);
            }
            if first_all.is_none()
                && seen.insert(r.partition(), ()).is_none()
                && seen.len() == nparts
            {
                first_all = Some(t0.elapsed().as_secs_f64());
            }
            if let Some(&(len, s)) = r.value() {
                bytes += len;
                sum += s;
            }
            records += 1;
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let (idle_cpu0, t1) = (process_cpu_s(), Instant::now());
    while t1.elapsed().as_secs_f64() < linger {
        let _ = c.poll(Duration::from_millis(100)).await;
    }
    let idle_pct = 100.0 * (process_cpu_s() - idle_cpu0) / t1.elapsed().as_secs_f64();
    // Java's fetch-manager count (the client is a translation of the Java one, metric names too).
    let mut fetches = None;
    let mut req_avg = None;
    for (name, m) in c.metrics().snapshot().iter() {
        let v = m.metric_value().as_double();
        if name.group() == "consumer-fetch-manager-metrics"
            && name.name() == "fetch-total"
            && !name.tags().contains_key("topic")
        {
            fetches = v;
        } else if name.group() == "consumer-metrics" && name.name() == "request-size-avg" {
            req_avg = v;
        }
    }
    let mut line = format!(
        "{{\"client\":\"confluent-kafka-rust\",\"version\":\"{}\",\"mode\":\"{mode}\",\"topic\":\"{topic}\",\
         \"records\":{records},\"bytes\":{bytes},\"value_sum\":{sum},\"wall_s\":{wall:.3},\"polls\":{polls}",
        client_version()
    );
    if let Some(f) = fetches.filter(|f| f.is_finite()) {
        line += &format!(",\"fetch_requests\":{}", f as i64);
    }
    if let Some(a) = req_avg.filter(|a| a.is_finite()) {
        line += &format!(",\"request_size_avg\":{a:.0}");
    }
    if let Some(f) = first_all {
        line += &format!(",\"first_all_s\":{f:.3}");
    }
    if linger > 0.0 {
        line += &format!(",\"idle_s\":{linger:.1},\"idle_cpu_pct\":{idle_pct:.3}");
    }
    // In delivery order: the producer's warm-up; a warm-up of every record leaves no percentiles.
    lat_us.drain(..warmup.min(lat_us.len()));
    if !lat_us.is_empty() {
        lat_us.sort_unstable();
        let n = lat_us.len();
        let ms = |i: usize| lat_us[i] as f64 / 1000.0;
        line += &format!(
            ",\"lat_records\":{n},\"lat_p50_ms\":{:.2},\"lat_p99_ms\":{:.2},\"lat_p999_ms\":{:.2}",
            ms(n / 2),
            ms(n * 99 / 100),
            ms(n * 999 / 1000)
        );
    }
    println!("{line}}}");
    if let Err(e) = c.close().await {
        eprintln!("rust_consume: close: {e:?}");
    }
}
