import { Command } from 'commander';
import { configSample } from '../config/index.js';

/** `cyborg config sample`: a commented cyborg.conf, generated from the schema. */
export function configCommand(): Command {
  const config = new Command('config').description('the configuration file');
  config
    .command('sample')
    .description('print a commented cyborg.conf with every option, its default and environment variable')
    .action(() => {
      process.stdout.write(configSample());
    });
  return config;
}
