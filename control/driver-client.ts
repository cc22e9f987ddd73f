/**
 * A view in which a driver operation is under way (its machine's `busy` tag: installing,
 * programming, updating…): a call that outlasts the request timeout in one is accepted work, not a failure.
 */
export function isBusy(view: { tags: readonly string[] }): boolean {
  return view.tags.includes('busy');
}
