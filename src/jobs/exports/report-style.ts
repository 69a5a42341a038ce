// The report's one stylesheet (inline: the page loads nothing). Screen first, then print: black
// on white, no shadows, findings never split across pages, bars kept in colour
// (print-color-adjust), the URL-ish keys allowed to wrap.
export const REPORT_STYLE = `
:root { --ok:#2e7d32; --part:#f9a825; --bad:#c62828; --skip:#9e9e9e; --ink:#1b1f24; --mute:#5f6b76; --line:#d8dee4; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1100px; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; color: var(--ink); background: #fff; }
header { border-bottom: 3px solid var(--ink); padding-bottom: 12px; margin-bottom: 16px; }
.brand { margin: 0; color: var(--mute); font-size: 12px; letter-spacing: .08em; text-transform: uppercase; }
h1 { margin: 4px 0 12px; font-size: 26px; overflow-wrap: anywhere; }
h2 { font-size: 19px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; text-transform: capitalize; }
h4 { margin: 0 0 4px; font-size: 14px; }
code { font: 12px/1.3 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.facts { display: grid; grid-template-columns: repeat(4, minmax(0, 1fr)); gap: 8px 16px; margin: 0; }
.facts dt { color: var(--mute); font-size: 12px; }
.facts dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { font-weight: 600; }
.num { font-variant-numeric: tabular-nums; font-weight: 600; }
.small { color: var(--mute); font-size: 12px; }
.bar { display: flex; width: 100%; min-width: 160px; height: 14px; background: #eef1f4; border-radius: 3px; overflow: hidden; }
.bar.thin { height: 10px; }
.seg { display: inline-block; height: 100%; min-width: 2px; }
.legend .seg { width: 12px; height: 10px; vertical-align: middle; margin-left: 10px; }
.ok { background: var(--ok); } .part { background: var(--part); } .bad { background: var(--bad); } .skip { background: var(--skip); }
.st { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; }
.st-ok { background: var(--ok); } .st-warn { background: #b26a00; }
.verdict { padding: 8px 12px; border-radius: 4px; margin: 8px 0; }
.verdict.ok { background: #e8f5e9; border-left: 4px solid var(--ok); }
.verdict.warn { background: #fff8e1; border-left: 4px solid var(--part); }
.sv { display: inline-block; min-width: 64px; text-align: center; padding: 1px 6px; border-radius: 3px; font-size: 11px; font-weight: 700; text-transform: uppercase; color: #fff; }
.sv-critical { background: #7b1fa2; } .sv-high { background: #c62828; } .sv-medium { background: #ef6c00; } .sv-low { background: #1565c0; } .sv-info { background: #607d8b; }
.sev { width: auto; min-width: 420px; }
.sev td:last-child { width: 260px; }
.finding { border: 1px solid var(--line); border-left-width: 5px; border-radius: 4px; padding: 8px 12px; margin: 8px 0; }
.sv-border-critical { border-left-color: #7b1fa2; } .sv-border-high { border-left-color: #c62828; } .sv-border-medium { border-left-color: #ef6c00; }
.sv-border-low { border-left-color: #1565c0; } .sv-border-info { border-left-color: #607d8b; }
.finding p { margin: 4px 0; overflow-wrap: anywhere; }
.meta { color: var(--mute); font-size: 12px; }
.key { font-family: ui-monospace, Menlo, Consolas, monospace; color: var(--ink); }
.ev { margin: 4px 0; padding-left: 18px; font: 12px/1.35 ui-monospace, Menlo, Consolas, monospace; overflow-wrap: anywhere; white-space: pre-wrap; }
.chg { display: inline-block; margin-left: 6px; padding: 0 6px; border: 1px solid var(--mute); border-radius: 3px; font-size: 11px; color: var(--mute); }
table.chg { width: auto; }
.sup { color: var(--mute); font-style: italic; }
#suppressed .finding { opacity: .8; }
.lims li { margin: 3px 0; }
footer { margin-top: 32px; border-top: 1px solid var(--line); }
@media print {
  @page { margin: 14mm 12mm; }
  body { max-width: none; padding: 0; font-size: 11px; }
  h1 { font-size: 20px; }
  h2 { font-size: 15px; break-after: avoid; }
  .finding, tr { break-inside: avoid; }
  .bar, .seg, .sv, .st { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  .facts { grid-template-columns: repeat(2, minmax(0, 1fr)); }
}
`;
