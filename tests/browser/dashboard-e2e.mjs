// The dashboard in headless Chromium (Debian's, at /usr/bin/chromium): open the overview,
// search a job by a value in its data, retry a failed job and see it move, run a bulk retry
// on a search and see the counts change, edit a job's data, promote a ticked delayed job,
// watch a live count rise and a queue's rows move while a producer runs; check the overview's table fits 1280 px;
// screenshots at desktop and phone widths, light and dark.
// Env: BASE (the dashboard's URL, no trailing slash), QUEUE, FAILED (a failed job's id),
// SHOWN (another failed job's id, the job page of the screenshots),
// NEEDLE (a value in a waiting job's data), NEEDLE_NAME (that job's name), BULK (a value in
// the data of BULK_COUNT failed jobs), LIVE_QUEUE (a queue a producer is filling), STORE (a
// label for the screenshots' names), OUT (where screenshots go). Prints one JSON line.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const { BASE, QUEUE, FAILED, SHOWN, NEEDLE, NEEDLE_NAME, BULK, BULK_COUNT, LIVE_QUEUE, STORE, OUT } = process.env;
// Generous: the machine running the suite may be busy; nothing here measures time.
const WAIT = 60_000;
const queueUrl = `${BASE}/c/main/q/${encodeURIComponent(QUEUE)}`;
const profile = mkdtempSync(join(tmpdir(), "bullmq-dashboard-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
context.setDefaultTimeout(WAIT);
const shots = [];
const steps = [];
const errors = [];
const failedCount = (page) => page.locator('.tab .count[data-state="failed"]').textContent().then(Number);
try {
  const page = await context.newPage();
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("response", (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });
  // The bulk and remove buttons ask for a confirmation.
  page.on("dialog", (dialog) => dialog.accept());

  await page.goto(BASE);
  await page.getByRole("link", { name: QUEUE, exact: true }).click();
  await page.waitForURL(queueUrl);
  steps.push("overview → queue");

  await page.fill('input[name="q"]', NEEDLE);
  await page.click('form.search button[type="submit"]');
  await page.getByRole("cell", { name: NEEDLE_NAME, exact: true }).waitFor();
  await page.getByText("Searched").waitFor();
  steps.push(`searched "${NEEDLE}" in the data: found ${NEEDLE_NAME}`);

  await page.goto(`${queueUrl}?state=failed`);
  const failedBefore = await failedCount(page);
  await page.getByRole("link", { name: FAILED, exact: true }).click();
  await page.locator("h1 .badge", { hasText: "failed" }).waitFor();
  await page.getByRole("button", { name: "retry" }).click();
  await page.getByText("Done: retried").waitFor();
  await page.locator("h1 .badge", { hasText: "waiting" }).waitFor();
  steps.push("retried the failed job: it is waiting");

  await page.goto(`${queueUrl}?state=failed`);
  await page.locator('.tab .count[data-state="failed"]', { hasText: new RegExp(`^${failedBefore - 1}$`) }).waitFor();
  await page.fill('input[name="q"]', BULK);
  await page.click('form.search button[type="submit"]');
  await page.getByRole("link", { name: "retry every matching job…" }).click();
  await page.locator("[data-bulk-count]", { hasText: new RegExp(`^${BULK_COUNT}$`) }).waitFor();
  await page.getByRole("button", { name: `retry ${BULK_COUNT} job(s)` }).click();
  await page.getByText("Finished:").waitFor();
  await page.getByText(`${BULK_COUNT} of ${BULK_COUNT} job(s) retried`).waitFor();
  await page.getByRole("link", { name: "back to the queue" }).click();
  const failedAfter = failedBefore - 1 - Number(BULK_COUNT);
  await page.locator('.tab .count[data-state="failed"]', { hasText: new RegExp(`^${failedAfter}$`) }).waitFor();
  steps.push(`bulk retry on "${BULK}": the failed count went from ${failedBefore - 1} to ${failedAfter}`);

  // The retried job's data, edited in its page's form.
  await page.goto(`${queueUrl}/jobs/${encodeURIComponent(FAILED)}`);
  await page.getByText("Edit the data").click();
  await page.fill('textarea[name="data"]', '{"edited":"in-the-browser"}');
  await page.getByRole("button", { name: "update data" }).click();
  await page.getByText("Done: updated data").waitFor();
  await page.locator("pre.value", { hasText: "in-the-browser" }).first().waitFor();
  steps.push("edited the retried job's data from its page");

  // A delayed job ticked in the list, then promoted with the selected-jobs form.
  await page.goto(`${queueUrl}?state=delayed`);
  const delayedBefore = Number(await page.locator('.tab .count[data-state="delayed"]').textContent());
  await page.locator('input[form="selected"]').first().check();
  await page.selectOption('form#selected select[name="action"]', "promote");
  await page.getByRole("button", { name: "apply" }).click();
  await page.getByText("promoted 1 of 1 selected job(s)").waitFor();
  await page.locator('.tab .count[data-state="delayed"]', { hasText: new RegExp(`^${delayedBefore - 1}$`) }).waitFor();
  steps.push(`promoted a ticked delayed job: delayed went from ${delayedBefore} to ${delayedBefore - 1}`);

  // The producer adds jobs to LIVE_QUEUE meanwhile: its waiting count rises with no reload.
  await page.goto(BASE);
  const cell = page.locator(`tr[data-queue="${LIVE_QUEUE}"] td[data-state="waiting"]`);
  const before = Number(await cell.textContent());
  await page.waitForFunction(
    ([selector, floor]) => Number(document.querySelector(selector)?.textContent) >= floor,
    [`tr[data-queue="${LIVE_QUEUE}"] td[data-state="waiting"]`, before + 2],
    { timeout: WAIT },
  );
  const after = Number(await cell.textContent());
  steps.push(`the overview's live waiting count rose from ${before} to ${after} while a producer ran`);
  // Its jobs in over the last minute, from the event stream.
  await page.waitForFunction(
    (selector) => Number(document.querySelector(selector)?.textContent) > 0,
    `tr[data-queue="${LIVE_QUEUE}"] td[data-rate="in"]`,
    { timeout: WAIT },
  );
  const rate = await page.locator(`tr[data-queue="${LIVE_QUEUE}"] td[data-rate="in"]`).textContent();
  steps.push(`the overview shows ${rate} job(s) in over the last minute`);
  // The queue's page lists its events as they come.
  await page.goto(`${BASE}/c/main/q/${encodeURIComponent(LIVE_QUEUE)}`);
  await page.locator("[data-events] li", { hasText: "added" }).first().waitFor();
  // Its list (newest first) gets the producer's new jobs without a reload.
  const firstId = () => page.locator("[data-rows] tbody tr td a").first().textContent();
  const firstBefore = await firstId();
  await page.waitForFunction(
    (id) => { const a = document.querySelector("[data-rows] tbody tr td a"); return a && a.textContent !== id; },
    firstBefore,
    { timeout: WAIT },
  );
  const firstAfter = await firstId();
  steps.push(`the producer's queue page lists its added events live, and its rows moved from job ${firstBefore} to ${firstAfter} first`);
  // With a job ticked, the rows stay and the page says they moved instead.
  await page.locator('input[form="selected"]').first().check();
  await page.locator("[data-stale]").waitFor({ state: "visible" });
  steps.push("with a job ticked, the rows stay and the page says the list moved");
  if (errors.length) throw new Error(`errors in the page: ${errors.join("; ")}`);

  for (const [label, viewport] of [["desktop", { width: 1280, height: 900 }], ["phone", { width: 390, height: 844 }]]) {
    await page.setViewportSize(viewport);
    for (const colorScheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme });
      for (const [name, url] of [["overview", BASE], ["queue", `${queueUrl}?state=waiting`], ["job", `${queueUrl}/jobs/${encodeURIComponent(SHOWN)}`]]) {
        await page.goto(url);
        if (name === "overview" && label === "desktop") {
          // Every column in view: the table is no wider than its box.
          const [table, box] = await page.evaluate(() => {
            const t = document.querySelector("table.counts");
            return [t.scrollWidth, t.parentElement.clientWidth];
          });
          if (table > box) throw new Error(`the overview's table is ${table} px wide in a ${box} px box at 1280 px`);
          if (colorScheme === "light") steps.push(`the overview's table fits 1280 px (${table} of ${box} px)`);
        }
        const file = `${OUT}/${STORE}-${name}-${label}-${colorScheme}.png`;
        await page.screenshot({ path: file, fullPage: true });
        shots.push(file);
      }
    }
  }
  console.log(JSON.stringify({ ok: true, steps, shots }));
} catch (e) {
  console.log(JSON.stringify({ ok: false, steps, shots, errors, error: String(e) }));
  process.exitCode = 1;
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
