import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from '../support/service.js';

// Debian's chromium driven by playwright-core (`npx playwright install` cannot download
// browsers here), axe-core run inside each page, and the screenshots the README points to.

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** CI sets this: without a browser the tests then fail instead of being skipped. */
export const BROWSER_REQUIRED = process.env.CONSOLE_BROWSER_TESTS === 'required';
export const SCREENSHOT_DIR = path.join(ROOT, 'docs', 'console-screenshots');
const WRITE_SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS === '1';

export function browserAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (BROWSER_REQUIRED) throw new Error(`CONSOLE_BROWSER_TESTS=required but there is no browser at ${CHROMIUM} (apt-get install chromium)`);
  process.stderr.write(`No browser at ${CHROMIUM}: SKIPPING the console's browser tests (apt-get install chromium; CI requires them).\n`);
  return false;
}

export const launchBrowser = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[] }>;
}

/**
 * axe-core's serious and critical violations on the page as it stands. The source is
 * evaluated through the DevTools protocol, which the page's CSP does not govern (a script
 * tag would be refused, as it should be).
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations)")) as AxeViolation[];
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes.map((node) => JSON.stringify(node.target)).join(', ')}`);
}

/** Screenshots of the page at 1280 and 360 px wide (full page), only when CONSOLE_SCREENSHOTS=1. */
export async function screenshots(page: Page, name: string): Promise<void> {
  if (!WRITE_SCREENSHOTS) return;
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: 800 });
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

/** Nothing wider than the window at 360 px: the page reflows instead of scrolling sideways (tables scroll in their own box). */
export async function overflowsAt360(page: Page): Promise<boolean> {
  await page.setViewportSize({ width: 360, height: 800 });
  const overflows = (await page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth + 1')) as boolean;
  await page.setViewportSize({ width: 1280, height: 800 });
  return overflows;
}

/**
 * The words of the page's table headers and cells that a 360 px window breaks across lines
 * ("De / liv / ery"): each word's text range laid out on more than one line.
 */
export async function wordsBrokenAt360(page: Page): Promise<string[]> {
  await page.setViewportSize({ width: 360, height: 800 });
  const broken = (await page.evaluate(`(() => {
    const found = [];
    for (const cell of document.querySelectorAll('th, td')) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const match of node.data.matchAll(/\\S+/g)) {
          const range = document.createRange();
          range.setStart(node, match.index);
          range.setEnd(node, match.index + match[0].length);
          const tops = new Set([...range.getClientRects()].filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
          if (tops.size > 1) found.push(match[0]);
        }
      }
    }
    return found;
  })()`)) as string[];
  await page.setViewportSize({ width: 1280, height: 800 });
  return broken;
}
