//! Load benchmark of `lid serve`: recall requests/s and latency percentiles on loopback
//! for the demo agent, with the server's resident memory sampled every second.
//!
//! `cargo run --release -p lid-tests --example load -- [--seconds 60] [--connections 16]`
//! starts `lid serve --demo` on a temporary database (the real binary, the real SQLite
//! file, audit rows written for every recall) and drives it with keep-alive HTTP/1.1
//! connections, one client thread each, round-robin over a set of intents.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const INTENTS: &[&str] = &[
    "production is broken after the deploy",
    "cut and tag a new release",
    "someone assigned me a new bug, how severe is it",
    "review this pull request",
    "bump the dependencies to their latest versions",
    "write the weekly status update",
    "what am I never allowed to do",
    "the canary is failing, roll back",
];

fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// One keep-alive request; returns the status.
fn request(stream: &mut TcpStream, reader: &mut BufReader<TcpStream>, host: &str, path: &str, key: &str, body: &str) -> std::io::Result<u16> {
    let req = format!("POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    stream.write_all(req.as_bytes())?;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status: u16 = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut len = 0usize;
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut buf = vec![0u8; len];
    reader.read_exact(&mut buf)?;
    Ok(status)
}

fn pct(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn main() {
    let seconds: u64 = arg("--seconds", 20);
    let conns: usize = arg("--connections", 16);
    let warmup: u64 = arg("--warmup", 2);
    let dir = lid_tests::http::temp_dir("load");
    let mut child = Command::new(lid_tests::http::lid_bin())
        .args(["serve", "--demo", "--exit-with-stdin", "--addr", "127.0.0.1:0", "--db"])
        .arg(dir.join("lid.db"))
        .env("LID_CACHE_DIR", dir.join("cache"))
        .env("LID_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start lid serve");
    let pid = child.id();
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let (mut base, mut key, mut agent) = (String::new(), String::new(), String::new());
    let mut line = String::new();
    while out.read_line(&mut line).unwrap_or(0) > 0 {
        if let Some(u) = line.split_whitespace().find(|w| w.starts_with("http://")) {
            if base.is_empty() {
                base = u.to_string();
            }
        }
        if let Some(k) = line.strip_prefix("agent key:") {
            key = k.trim().to_string();
        }
        if let Some(a) = line.strip_prefix("demo agent:") {
            agent = a.split_whitespace().next().unwrap_or_default().to_string();
        }
        if line.trim() == "try:" {
            break;
        }
        line.clear();
    }
    std::thread::spawn(move || for _ in out.lines() {});
    let host = base.trim_start_matches("http://").to_string();
    let path = format!("/v1/agents/{agent}/recall-instruction");
    println!("lid serve (pid {pid}) at {base}; {conns} keep-alive connections, {warmup}s warm-up, {seconds}s measured");

    let stop = Arc::new(AtomicBool::new(false));
    let measuring = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for t in 0..conns {
        let (host, path, key, stop, measuring) = (host.clone(), path.clone(), key.clone(), stop.clone(), measuring.clone());
        handles.push(std::thread::spawn(move || {
            let mut stream = TcpStream::connect(&host).expect("connect");
            stream.set_nodelay(true).ok();
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let (mut lat, mut errors, mut i) = (Vec::with_capacity(1 << 16), 0u64, t);
            while !stop.load(Ordering::Relaxed) {
                let body = format!("{{\"intent\":\"{}\",\"heartbeat_id\":\"load-{t}\"}}", INTENTS[i % INTENTS.len()]);
                i += 1;
                let start = Instant::now();
                let ok = matches!(request(&mut stream, &mut reader, &host, &path, &key, &body), Ok(200));
                let us = start.elapsed().as_micros().min(u32::MAX as u128) as u32;
                if measuring.load(Ordering::Relaxed) {
                    if ok {
                        lat.push(us);
                    } else {
                        errors += 1;
                    }
                }
                if !ok {
                    stream = TcpStream::connect(&host).expect("reconnect");
                    reader = BufReader::new(stream.try_clone().expect("clone"));
                }
            }
            (lat, errors)
        }));
    }
    std::thread::sleep(Duration::from_secs(warmup));
    measuring.store(true, Ordering::Relaxed);
    let t0 = Instant::now();
    let mut rss = vec![rss_kib(pid)];
    while t0.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_secs(1));
        rss.push(rss_kib(pid));
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = t0.elapsed().as_secs_f64();
    let (mut all, mut errors) = (Vec::new(), 0);
    for h in handles {
        if let Ok((l, e)) = h.join() {
            all.extend(l);
            errors += e;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    all.sort_unstable();
    let n = all.len();
    let first = rss.first().copied().unwrap_or(0);
    let last = rss.last().copied().unwrap_or(0);
    let max = rss.iter().copied().max().unwrap_or(0);
    let half = rss.get(rss.len() / 2).copied().unwrap_or(0);
    println!(
        "recall: {n} ok, {errors} errors in {elapsed:.1}s = {:.0} req/s; latency p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        n as f64 / elapsed,
        pct(&all, 0.5),
        pct(&all, 0.9),
        pct(&all, 0.99),
        all.last().copied().unwrap_or(0) as f64 / 1000.0
    );
    println!("server RSS: start {:.1} MiB, middle {:.1} MiB, end {:.1} MiB, max {:.1} MiB (sampled each second)", first as f64 / 1024.0, half as f64 / 1024.0, last as f64 / 1024.0, max as f64 / 1024.0);
    let _ = std::fs::remove_dir_all(&dir);
}
