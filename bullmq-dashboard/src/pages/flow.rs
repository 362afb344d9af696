//! A job's place in its flow, drawn as a tree across queues: up the parents to the root,
//! then down the children, each node a link to its page. Bounded in depth and nodes, so a
//! huge flow costs a bounded number of store calls.

use bullmq::backend::{DependenciesQuery, DependencyKind, Lifecycle as _};
use bullmq::{AnyBackend, Job, JobId, Queue, QueueName};
use maud::{Markup, html};

use super::layout::View;
use crate::state::ConnEntry;
use crate::urls;

/// Parents climbed at most.
const UP: usize = 8;
/// Levels drawn below the root at most.
const DOWN: usize = 4;
/// Children read per node (of each list).
const CHILDREN: u64 = 20;
/// Nodes drawn at most.
const NODES: usize = 100;

/// One node: where it is, what it is, and its children drawn (`more` when some are not).
struct Node {
    queue: String,
    id: String,
    name: Option<String>,
    state: Option<&'static str>,
    children: Vec<usize>,
    more: bool,
}

/// The job `id` of `queue` on `conn`, and its state; `None` when it cannot be read.
async fn load(conn: &ConnEntry, queue: &str, id: &str) -> Option<(Queue<AnyBackend>, Job)> {
    let name = QueueName::new(queue.to_owned()).ok()?;
    let queue = conn.queue(&name).await.ok()?;
    let job = queue.get_job(&JobId::from(id)).await.ok()??;
    Some((queue, job))
}

/// The keys of a job's children: processed, pending, failed and ignored, the first of each.
async fn child_keys(queue: &Queue<AnyBackend>, id: &str) -> (Vec<String>, bool) {
    let lists = [
        DependencyKind::Processed,
        DependencyKind::Unprocessed,
        DependencyKind::Failed,
        DependencyKind::Ignored,
    ];
    let deps = queue
        .job(JobId::from(id))
        .get_dependencies(&DependenciesQuery {
            lists: lists.iter().map(|k| (*k, 0, CHILDREN)).collect(),
        })
        .await
        .unwrap_or_default();
    let mut keys = Vec::new();
    let mut more = false;
    if let Some((list, next)) = deps.processed {
        more |= next != 0;
        keys.extend(list.into_iter().map(|(k, _)| k));
    }
    if let Some((list, next)) = deps.unprocessed {
        more |= next != 0;
        keys.extend(list);
    }
    if let Some((list, next)) = deps.failed {
        more |= next != 0;
        keys.extend(list);
    }
    if let Some((list, next)) = deps.ignored {
        more |= next != 0;
        keys.extend(list.into_iter().map(|(k, _)| k));
    }
    (keys, more)
}

/// The tree around `job` (of `queue`), or `None` when it is in no flow.
pub(crate) async fn tree(
    view: &View,
    conn: &ConnEntry,
    queue: &Queue<AnyBackend>,
    job: &Job,
) -> Option<Markup> {
    let backend = queue.backend();
    let (mut root_queue, mut root_id) =
        (queue.name().as_str().to_owned(), job.id.as_str().to_owned());
    let mut parent_key = job.parent_key.clone();
    for _ in 0..UP {
        let Some(node) = parent_key
            .as_deref()
            .and_then(|k| backend.parse_node_key(k))
        else {
            break;
        };
        parent_key = load(conn, &node.queue, &node.id)
            .await
            .and_then(|(_, parent)| parent.parent_key);
        (root_queue, root_id) = (node.queue, node.id);
    }
    let mut nodes = vec![Node {
        queue: root_queue,
        id: root_id,
        name: None,
        state: None,
        children: Vec::new(),
        more: false,
    }];
    // Breadth first, level by level, until the bounds.
    let mut level = vec![0_usize];
    for depth in 0..=DOWN {
        let mut next = Vec::new();
        for at in level {
            let (q, id) = (nodes[at].queue.clone(), nodes[at].id.clone());
            let Some((node_queue, node_job)) = load(conn, &q, &id).await else {
                continue;
            };
            nodes[at].name = Some(node_job.name.clone());
            nodes[at].state = node_queue
                .get_job_state(&node_job.id)
                .await
                .ok()
                .flatten()
                .map(bullmq::job::JobState::as_str);
            let (keys, more) = child_keys(&node_queue, &id).await;
            nodes[at].more = more;
            if depth == DOWN {
                nodes[at].more |= !keys.is_empty();
                continue;
            }
            for key in keys {
                let Some(child) = backend.parse_node_key(&key) else {
                    continue;
                };
                if nodes.len() == NODES {
                    nodes[at].more = true;
                    break;
                }
                nodes.push(Node {
                    queue: child.queue,
                    id: child.id,
                    name: None,
                    state: None,
                    children: Vec::new(),
                    more: false,
                });
                let child_at = nodes.len() - 1;
                nodes[at].children.push(child_at);
                next.push(child_at);
            }
        }
        level = next;
    }
    if nodes.len() == 1 {
        return None;
    }
    let here = (queue.name().as_str(), job.id.as_str());
    Some(html! { ul.tree { (draw(view, &conn.name, &nodes, 0, here)) } })
}

/// One node and, below it, its children.
fn draw(view: &View, conn: &str, nodes: &[Node], at: usize, here: (&str, &str)) -> Markup {
    let node = &nodes[at];
    let current = (node.queue.as_str(), node.id.as_str()) == here;
    html! {
        li {
            @if current {
                strong.current { (node.queue) " / " (node.id) }
            } @else {
                a href=(view.href(&urls::job(conn, &node.queue, &node.id))) { (node.queue) " / " (node.id) }
            }
            @if let Some(name) = &node.name { " " span.muted { (name) } }
            " " span.badge { (node.state.unwrap_or("gone")) }
            @if !node.children.is_empty() || node.more {
                ul {
                    @for child in &node.children { (draw(view, conn, nodes, *child, here)) }
                    @if node.more { li.muted { "…more not drawn" } }
                }
            }
        }
    }
}
