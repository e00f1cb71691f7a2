/** Polls until `check` returns true, failing after `timeoutMs`: for effects that arrive asynchronously. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 2000, intervalMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
