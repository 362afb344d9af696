//! The typed layer: a producer bound to its data type, a processor that receives that type
//! decoded and returns any `Serialize`, and data that does not fit failing the job with the
//! field path, on every store.

use serde::{Deserialize, Serialize};
use serde_json::json;

use bullmq::{ActiveJob, CancellationToken, JobError, JobOptions, JobState, Queue, Worker, typed};

use crate::ctx::{Ctx, fast};
use crate::store::Store;

#[derive(Debug, Serialize, Deserialize)]
struct Order {
    customer: String,
    lines: Vec<Line>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Line {
    sku: String,
    qty: u32,
}

#[derive(Serialize)]
struct Total {
    customer: String,
    items: u32,
}

pub async fn a_typed_processor_gets_its_type_and_a_mismatch_fails_with_the_path<S: Store>() {
    let ctx = Ctx::<S>::new("typed").await;
    let orders = Queue::from_backend(ctx.backend().await)
        .unwrap()
        .typed::<Order>();
    let order = Order {
        customer: "ada".into(),
        lines: vec![
            Line {
                sku: "A".into(),
                qty: 2,
            },
            Line {
                sku: "B".into(),
                qty: 3,
            },
        ],
    };
    let good = orders
        .add("total", &order, JobOptions::new())
        .await
        .unwrap()
        .id;
    // A producer of another runtime (or an older version) writes data that does not fit.
    let bad = ctx
        .add(
            "total",
            json!({"customer": "bob", "lines": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": "two"}]}),
            JobOptions::new().attempts(3),
        )
        .await;

    let processor = typed(
        |order: Order, _job: ActiveJob<S::B>, _cancel: CancellationToken| async move {
            let items = order.lines.iter().map(|l| l.qty).sum();
            Ok::<_, JobError>(Total {
                customer: order.customer,
                items,
            })
        },
    );
    let worker = Worker::builder(Queue::from_backend(ctx.backend().await).unwrap(), processor)
        .options(fast())
        .build()
        .await
        .unwrap();

    ctx.wait_state(&good, JobState::Completed).await;
    // Compared as values: PostgreSQL keeps a return value as `jsonb`, in its own key order.
    let total: serde_json::Value =
        serde_json::from_str(&ctx.job(&good).await.return_value.unwrap()).unwrap();
    assert_eq!(total, json!({"customer": "ada", "items": 5}));
    ctx.wait_state(&bad, JobState::Failed).await;
    let failed = ctx.job(&bad).await;
    let reason = failed.failed_reason.unwrap_or_default();
    assert!(
        reason.contains("at `lines[1].qty`: invalid type: string \"two\""),
        "{reason}"
    );
    // Data that does not fit is not retried: no attempt would decode it.
    assert_eq!(failed.attempts_made, 1);
    worker.close().await;
}
