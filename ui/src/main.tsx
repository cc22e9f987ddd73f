import { render } from 'preact';
import { App } from './app.js';
import { store } from './store.js';
import { follow } from './stream.js';
import './style.css';

follow(store);
render(<App store={store} />, document.getElementById('app')!);
