// Drives a webpilot session over its DevTools endpoint with puppeteer-core (no browser download):
// connect, pages(), newPage(), goto, evaluate, then browser.close(). Prints what it saw as one JSON line.
// usage: node cdp_puppeteer.mjs <cdpURL> <fixture site base URL>
import puppeteer from 'puppeteer-core';

const [url, rawSite] = process.argv.slice(2);
const site = rawSite.replace(/\/$/, '');
const out = {};
const browser = await puppeteer.connect({ browserWSEndpoint: url, defaultViewport: null, protocolTimeout: 30000 });
const pages = await browser.pages();
out.pages = pages.length;
out.first_url = pages[0].url();
const page = await browser.newPage();
await page.goto(`${site}/pricing`);
out.title = await page.title();
out.evaluated = await page.evaluate(() => 6 * 7);
out.pages_after = (await browser.pages()).length;
out.contexts = browser.browserContexts().length;
await browser.close();
out.closed = true;
console.log(JSON.stringify(out));
