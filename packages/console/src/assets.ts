/**
 * The console's stylesheet and script, served as files so the page's
 * Content-Security-Policy allows no inline code. The script only enhances:
 * every page works without it (forms post, links page).
 */

export const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2330; }
header { background: #1d2330; color: #fff; padding: 10px 24px; display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
header a.home { color: #fff; font-weight: 700; } header code { color: #cfd6e4; }
main { max-width: 1200px; margin: 0 auto; padding: 20px 24px; } main:focus { outline: none; }
h1 { font-size: 22px; margin: 8px 0; word-break: break-all; } h2 { font-size: 16px; margin: 24px 0 8px; }
.meta { color: #4f586a; } code, pre { font: 12px ui-monospace, monospace; }
pre.json { margin: 0; white-space: pre-wrap; word-break: break-all; max-height: 320px; overflow: auto; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid #d5d9e1; }
caption { text-align: left; font-weight: 600; padding: 6px 0; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e3e6ec; vertical-align: top; }
th { background: #eef0f4; font-weight: 600; font-size: 12px; color: #333b4a; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
a { color: #1d4fb8; } a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible { outline: 3px solid #e0a100; outline-offset: 2px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #e2e5eb; color: #2d3544; margin-right: 2px; }
.badge.done, .badge.ran, .badge.approved { background: #dcf1e2; color: #15592b; }
.badge.running, .badge.retrying, .badge.to-run-again, .badge.awaits-a-worker { background: #fff0cc; color: #6e4700; }
.badge.paused, .badge.needs-approval, .badge.waiting-on-approval, .badge.awaits-next-message, .badge.awaits-resume, .badge.awaits-event { background: #ebe0fa; color: #4a2390; }
.badge.failed, .badge.unreadable, .badge.in-doubt, .badge.error, .badge.cancelled, .badge.needs-decision { background: #fbdede; color: #8f1b1b; }
.badge.recovered, .badge.replayed, .badge.claim { background: #dbe7fc; color: #1a459b; }
.badge.rerun, .badge.decided, .badge.reopened, .badge.operator { background: #ffe4d1; color: #853a09; }
.badge.actions { background: #ffe4d1; color: #853a09; } .badge.read-only { background: #dcf1e2; color: #15592b; }
.problem { background: #fbdede; color: #8f1b1b; padding: 8px 12px; border-radius: 6px; }
.notice { background: #dcf1e2; color: #15592b; padding: 8px 12px; border-radius: 6px; }
ol.messages { list-style: none; padding: 0; } li.message { background: #fff; border: 1px solid #d5d9e1; border-radius: 6px; margin: 6px 0; padding: 6px 12px; }
li.message.user { border-left: 4px solid #1d4fb8; } li.message.assistant { border-left: 4px solid #15592b; } li.message.tool { border-left: 4px solid #6e4700; } li.message.failed { border-left-color: #8f1b1b; }
p.who { margin: 2px 0; } p.says { white-space: pre-wrap; margin: 4px 0; } ul.asks { margin: 4px 0; } li.message details { border: 0; padding: 0; }
.waits { background: #eef0f4; padding: 8px 12px; border-radius: 6px; }
.changed { background: #fff0cc; color: #6e4700; padding: 8px 12px; border-radius: 6px; }
form.filters { display: flex; gap: 12px; flex-wrap: wrap; align-items: end; background: #fff; border: 1px solid #d5d9e1; padding: 10px 12px; margin-bottom: 12px; }
form.filters fieldset { border: 0; padding: 0; margin: 0; display: flex; gap: 8px; flex-wrap: wrap; }
form.filters legend { font-size: 12px; font-weight: 600; padding: 0; }
label { font-size: 12px; font-weight: 600; } label input, label select, label textarea { display: block; font: inherit; font-weight: 400; margin-top: 2px; }
fieldset.check label { font-weight: 400; display: inline-flex; gap: 4px; align-items: center; } fieldset.check input { display: inline; margin: 0; }
button { font: inherit; padding: 4px 12px; border-radius: 4px; border: 1px solid #5f6b80; background: #fff; cursor: pointer; }
button.danger { border-color: #8f1b1b; color: #8f1b1b; }
.pager { display: flex; gap: 16px; margin: 12px 0; }
section.action { background: #fff; border: 1px solid #d5d9e1; padding: 10px 12px; margin: 8px 0; }
section.action form { display: flex; gap: 12px; flex-wrap: wrap; align-items: end; }
details { background: #fff; border: 1px solid #d5d9e1; margin: 4px 0; padding: 4px 10px; } summary { cursor: pointer; padding: 4px 0; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 8px; top: 8px; background: #fff; padding: 6px; z-index: 2; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.live { font-size: 12px; }
`;

export const SCRIPT = `
(() => {
  "use strict";
  const body = document.body;
  const status = document.getElementById("live-status");
  const say = (text) => { if (status) status.textContent = text; };
  // The list: refresh its region every few seconds while "Live" is checked and nothing in it has focus.
  const region = document.getElementById("runs-region");
  const live = document.getElementById("live");
  if (region && live) {
    setInterval(async () => {
      if (!live.checked || region.contains(document.activeElement)) return;
      try {
        const reply = await fetch(location.href, { headers: { accept: "text/html" }, credentials: "same-origin" });
        if (!reply.ok) return;
        const next = new DOMParser().parseFromString(await reply.text(), "text/html").getElementById("runs-region");
        if (next && next.innerHTML !== region.innerHTML) { region.innerHTML = next.innerHTML; say("Runs updated."); }
      } catch { /* the next tick tries again */ }
    }, Number(body.dataset.refreshMs || 5000));
  }
  // A run's page: tell when the run moved on since the page was loaded (its actions would be refused).
  const runId = body.dataset.runId;
  if (runId !== undefined) {
    const banner = document.getElementById("run-changed");
    setInterval(async () => {
      try {
        const reply = await fetch("/api/runs/" + encodeURIComponent(runId) + "?head=1", { credentials: "same-origin" });
        if (!reply.ok) return;
        const head = await reply.json();
        if (String(head.step) !== body.dataset.step && banner && banner.hidden) {
          banner.hidden = false;
          banner.querySelector("[data-now]").textContent = "step " + head.step + ", " + head.status;
          say("This run changed since the page was loaded.");
        }
      } catch { /* the next tick tries again */ }
    }, Number(body.dataset.refreshMs || 5000));
  }
  // A decision on a call in doubt: the result field matters for "it happened", the error for "failed".
  for (const select of document.querySelectorAll("select[data-decision]")) {
    const form = select.form;
    const sync = () => {
      for (const field of form.querySelectorAll("[data-for]")) field.hidden = field.dataset.for !== select.value;
    };
    select.addEventListener("change", sync);
    sync();
  }
})();
`;
