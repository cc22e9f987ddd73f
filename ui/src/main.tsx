import { render } from 'preact';
import { useEffect } from 'preact/hooks';
import { App } from './app.js';
import { session } from './auth.js';
import { SignIn, useSession } from './components/signin.js';
import { store } from './store.js';
import { followProjectNames } from './names.js';
import { follow } from './stream.js';
import './style.css';

/** The fleet, followed live while it is on screen (a sign-out stops the stream), its holders' projects named. */
function Live() {
  useEffect(() => {
    const stop = [follow(store), followProjectNames(store)];
    return () => stop.forEach((f) => f());
  }, []);
  return <App store={store} />;
}

/** In keystone mode the form until signed in (and again after a sign-out or an expired token); in noauth the page as it always was. */
function Root() {
  const s = useSession();
  if (s.mode === 'unknown')
    return (
      <p class="muted hint" data-testid="starting">
        {s.error || 'connecting to the api…'}
      </p>
    );
  if (!s.ready) return <SignIn s={s} />;
  return <Live />;
}

render(<Root />, document.getElementById('app')!);
void (async () => {
  // Until the api answers (it may be starting), ask again.
  for (let wait = 500; session.mode === 'unknown'; wait = Math.min(wait * 2, 10_000)) {
    await session.start();
    if (session.mode === 'unknown') await new Promise((r) => setTimeout(r, wait));
  }
})();
