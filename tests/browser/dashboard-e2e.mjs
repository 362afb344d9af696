// The dashboard in headless Chromium: open the overview, search a job, retry a failed job and
// see it move; screenshots at desktop and phone widths, light and dark.
// Env: BASE (the dashboard's URL, no trailing slash), QUEUE, FAILED (a failed job's id),
// NEEDLE (a waiting job's name), OUT (where screenshots go). Prints one JSON line.
import { chromium } from "playwright-core";

const { BASE, QUEUE, FAILED, NEEDLE, OUT } = process.env;
const queueUrl = `${BASE}/c/main/q/${encodeURIComponent(QUEUE)}`;
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"],
});
const shots = [];
const steps = [];
try {
  for (const [label, viewport] of [["desktop", { width: 1280, height: 900 }], ["phone", { width: 390, height: 844 }]]) {
    for (const colorScheme of ["light", "dark"]) {
      const context = await browser.newContext({ viewport, colorScheme });
      const page = await context.newPage();
      for (const [name, url] of [["overview", BASE], ["queue", `${queueUrl}?state=failed`], ["job", `${queueUrl}/jobs/${encodeURIComponent(FAILED)}`]]) {
        await page.goto(url);
        const file = `${OUT}/${name}-${label}-${colorScheme}.png`;
        await page.screenshot({ path: file, fullPage: true });
        shots.push(file);
      }
      await context.close();
    }
  }

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });

  await page.goto(BASE);
  await page.getByRole("link", { name: QUEUE }).click();
  await page.waitForURL(`${queueUrl}`);
  steps.push("overview → queue");

  await page.fill('input[name="name"]', NEEDLE);
  await page.click('form.search button[type="submit"]');
  await page.getByRole("cell", { name: NEEDLE }).waitFor();
  steps.push("searched a job by name");

  await page.goto(`${queueUrl}?state=failed`);
  await page.getByRole("link", { name: FAILED, exact: true }).click();
  await page.getByText("failed", { exact: true }).first().waitFor();
  await page.getByRole("button", { name: "retry" }).click();
  await page.getByText("Done: retried").waitFor();
  await page.locator("h1 .badge", { hasText: "waiting" }).waitFor();
  steps.push("retried the failed job: it is waiting");

  await page.goto(`${queueUrl}?state=failed`);
  // The live script keeps the tab counts; the failed count is now 0.
  await page.locator('.tab .count[data-state="failed"]', { hasText: /^0$/ }).waitFor();
  await page.getByText("No job.").waitFor();
  steps.push("the failed list is empty");
  // A live count rises while a job is added from another tab, without a reload.
  const overview = await context.newPage();
  overview.on("pageerror", (e) => errors.push(String(e)));
  await overview.goto(BASE);
  const cell = overview.locator(`tr[data-queue="${QUEUE}"] td[data-state="waiting"]`);
  const before = Number(await cell.textContent());
  await page.goto(queueUrl);
  await page.locator("summary", { hasText: "Add a job" }).click();
  await page.fill('input[name="name"][required]', "from-the-browser");
  await page.getByRole("button", { name: "add" }).click();
  await page.getByText("Done: added job").waitFor();
  await overview.locator(`tr[data-queue="${QUEUE}"] td[data-state="waiting"]`, { hasText: String(before + 1) }).waitFor();
  steps.push(`the overview's live waiting count rose from ${before} to ${before + 1}`);
  if (errors.length) throw new Error(`errors in the page: ${errors.join("; ")}`);
  console.log(JSON.stringify({ ok: true, steps, shots }));
} catch (e) {
  console.log(JSON.stringify({ ok: false, steps, shots, error: String(e) }));
  process.exitCode = 1;
} finally {
  await browser.close();
}
