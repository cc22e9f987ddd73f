import type { Driver } from './driver.js';

/** The drivers installed on one host, by name. Several backends may run side by side. */
export class DriverRegistry {
  private drivers = new Map<string, Driver>();

  constructor(drivers: Driver[] = []) {
    for (const d of drivers) this.add(d);
  }

  add(driver: Driver): void {
    if (this.drivers.has(driver.name)) throw new Error(`driver ${driver.name} is already registered`);
    this.drivers.set(driver.name, driver);
  }

  remove(name: string): boolean {
    return this.drivers.delete(name);
  }

  get(name: string): Driver | undefined {
    return this.drivers.get(name);
  }

  list(): Driver[] {
    return [...this.drivers.values()];
  }
}
