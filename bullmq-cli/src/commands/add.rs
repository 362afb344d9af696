//! `add QUEUE NAME`: one job, its data from `--data`, `--file` or stdin; `add QUEUE --jsonl F`:
//! many, one `{"name","data","opts"}` object per line, in bounded `add_bulk` batches.

use std::io::{BufRead, BufReader, Read as _};

use bullmq::options::options_from_value;
use bullmq::{AnyBackend, BulkJob, JobOptions, Queue};
use serde_json::{Value, json};

use crate::cli::AddArgs;
use crate::context::Ctx;
use crate::fail::Failure;
use crate::interrupt::Interrupt;
use crate::{output, progress};

pub(super) async fn run(ctx: &Ctx, args: &AddArgs) -> Result<(), Failure> {
    if let Some(source) = &args.stdin
        && source != "-"
    {
        return Err(Failure::usage(format!(
            "unexpected argument {source:?} after the job's name: only `-` (read the data from \
             stdin) may follow it; pass the data with --data JSON or --file FILE"
        )));
    }
    let opts = match &args.opts {
        Some(text) => options(text, "--opts")?,
        None => JobOptions::default(),
    };
    if let Some(path) = &args.jsonl {
        let queue = ctx.store.queue(&args.queue).await?;
        return many(ctx, &queue, args, path, &opts).await;
    }
    let Some(name) = &args.name else {
        return Err(Failure::usage(
            "`add` needs the job's name: bullmq add QUEUE NAME --data '{...}' (or --jsonl FILE for many)",
        ));
    };
    let (text, field) = match (&args.data, &args.file, &args.stdin) {
        (Some(data), _, _) => (data.clone(), "--data"),
        (None, Some(path), _) => (read(path)?, "--file"),
        (None, None, Some(_)) => (read("-")?, "stdin"),
        (None, None, None) => ("{}".to_owned(), "--data"),
    };
    let data: Value = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "the job's data ({field}) is not JSON: {e}; pass JSON such as '{{\"to\":\"a@b.c\"}}'"
        ))
    })?;
    let queue = ctx.store.queue(&args.queue).await?;
    let job = queue
        .add(name, &data, opts)
        .await
        .map_err(|e| add_error(ctx, &args.queue, &e))?;
    let item =
        json!({"command": "add", "queue": args.queue, "id": job.id.as_str(), "name": job.name});
    output::one(ctx.format, &item, || {
        format!(
            "added job {} ({name}) to queue {:?}",
            job.id.as_str(),
            args.queue
        )
    })
}

/// A bad option or data is the caller's to fix (exit 2); anything else is the store's.
fn add_error(ctx: &Ctx, queue: &str, e: &bullmq::Error) -> Failure {
    match e {
        bullmq::Error::Invalid(v) => Failure::usage(format!(
            "the job is refused: {v}; fix that option and run the command again"
        )),
        other => ctx.store.error("add a job to", queue, other),
    }
}

/// Job options from Node.js-style JSON (`{"attempts":3}`); `what` names where they came from.
pub(super) fn options(text: &str, what: &str) -> Result<JobOptions, Failure> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Failure::usage(format!(
            "{what} is not JSON: {e}; pass an object such as '{{\"attempts\":3,\"delay\":1000}}'"
        ))
    })?;
    if !value.is_object() {
        return Err(Failure::usage(format!(
            "{what} must be a JSON object, not {value}; pass an object such as '{{\"attempts\":3}}'"
        )));
    }
    let decoded = options_from_value(&value).map_err(|e| {
        Failure::usage(format!(
            "{what} cannot be read: {e}; check each option's type"
        ))
    })?;
    if let Some(bad) = decoded.invalid.first() {
        return Err(Failure::usage(format!(
            "{what} has an invalid option: {bad:?}; check its name and type against Node.js \
             BullMQ's JobsOptions"
        )));
    }
    Ok(decoded.options)
}

/// The whole of `path` (`-`: stdin).
fn read(path: &str) -> Result<String, Failure> {
    let mut text = String::new();
    let result = if path == "-" {
        std::io::stdin().read_to_string(&mut text).map(drop)
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    result.map_err(|e| {
        Failure::usage(format!(
            "cannot read {path:?}: {e}; check the path and its permissions"
        ))
    })?;
    Ok(text)
}

/// One line of `--jsonl` as a job; `default` names jobs whose line has no name.
fn line_job(
    text: &str,
    number: u64,
    default: Option<&str>,
    defaults: &JobOptions,
) -> Result<BulkJob<Value>, Failure> {
    let bad = |why: String| Failure::usage(format!("--jsonl line {number}: {why}"));
    let value: Value = serde_json::from_str(text).map_err(|e| {
        bad(format!(
            "not JSON ({e}); write one {{\"name\",\"data\",\"opts\"}} object per line"
        ))
    })?;
    let Value::Object(mut line) = value else {
        return Err(bad(
            "not a JSON object; write one {\"name\",\"data\",\"opts\"} object per line".to_owned(),
        ));
    };
    let name = match line.remove("name") {
        Some(Value::String(n)) => n,
        None if default.is_some() => default.unwrap_or_default().to_owned(),
        _ => {
            return Err(bad(
                "no \"name\" string; give each line a name, or the NAME argument".to_owned(),
            ));
        }
    };
    let data = line.remove("data").unwrap_or_else(|| json!({}));
    let opts = match line.remove("opts") {
        Some(o) => options(&o.to_string(), &format!("--jsonl line {number}'s \"opts\""))?,
        None => defaults.clone(),
    };
    Ok(BulkJob { name, data, opts })
}

async fn many(
    ctx: &Ctx,
    queue: &Queue<AnyBackend>,
    args: &AddArgs,
    path: &str,
    defaults: &JobOptions,
) -> Result<(), Failure> {
    let reader: Box<dyn BufRead> = if path == "-" {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        let file = std::fs::File::open(path).map_err(|e| {
            Failure::usage(format!(
                "cannot read {path:?}: {e}; check the path and its permissions"
            ))
        })?;
        Box::new(BufReader::new(file))
    };
    let interrupt = Interrupt::listen();
    let bar = progress::bar(0, "add");
    let (mut added, mut batches, mut number) = (0_u64, 0_u64, 0_u64);
    let (mut first_id, mut last_id) = (None, None);
    let mut batch = Vec::with_capacity(usize::try_from(args.batch).unwrap_or(1000));
    let mut interrupted = false;
    let mut lines = reader.lines();
    loop {
        let line = lines.next().transpose().map_err(|e| {
            Failure::usage(format!(
                "cannot read {path:?} after line {number}: {e}; check the file"
            ))
        })?;
        let end = line.is_none();
        if let Some(text) = line {
            number += 1;
            if number > args.skip && !text.trim().is_empty() {
                batch.push(line_job(&text, number, args.name.as_deref(), defaults)?);
            }
        }
        let full = batch.len() >= usize::try_from(args.batch).unwrap_or(1000);
        if (full || end) && !batch.is_empty() {
            if interrupt.is_set() {
                interrupted = true;
                break;
            }
            let size = u64::try_from(batch.len()).unwrap_or(u64::MAX);
            let jobs = queue
                .add_bulk(std::mem::take(&mut batch))
                .await
                .map_err(|e| {
                    let before = number - size;
                    Failure::failed(format!(
                        "{}; {added} jobs were added before (lines up to {before}): run again \
                         with --skip {before}",
                        add_error(ctx, &args.queue, &e).message
                    ))
                })?;
            added += size;
            batches += 1;
            if first_id.is_none() {
                first_id = jobs.first().map(|j| j.id.as_str().to_owned());
            }
            last_id = jobs.last().map(|j| j.id.as_str().to_owned());
            bar.set_length(added);
            bar.set_position(added);
        }
        if end {
            break;
        }
    }
    bar.finish_and_clear();
    let item = json!({
        "command": "add",
        "queue": args.queue,
        "added": added,
        "lines": number,
        "skipped": args.skip.min(number),
        "batches": batches,
        "first_id": first_id,
        "last_id": last_id,
        "interrupted": interrupted,
    });
    output::one(ctx.format, &item, || {
        format!(
            "added {added} jobs to queue {:?} in {}",
            args.queue,
            crate::fail::count_of(batches, "batch", "batches")
        )
    })?;
    if interrupted {
        let resume = number - u64::try_from(batch.len()).unwrap_or(0);
        return Err(Failure::failed(format!(
            "`add --jsonl` was interrupted after {added} jobs; run again with --skip {resume} to go on"
        )));
    }
    Ok(())
}
