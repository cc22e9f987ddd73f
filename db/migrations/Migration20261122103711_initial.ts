import { Migration } from '@mikro-orm/migrations';

export class Migration20261122103711_initial extends Migration {
  override name = 'Migration20261122103711_initial';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "accelerators" ("id" varchar(36) not null, "host" varchar(255) not null, "state" varchar(255) not null, "context" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "accelerators_host_index" on "accelerators" ("host");`);

    this.addSql(
      `create table "devices" ("id" serial primary key, "uuid" varchar(36) not null, "type" text not null, "vendor" varchar(255) not null, "model" varchar(255) not null, "std_board_info" text not null, "vendor_board_info" text not null, "hostname" varchar(255) not null, "status" text not null default 'enabled', "driver" varchar(255) not null, "stub" boolean not null default false, "position" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null);`,
    );
    this.addSql(`alter table "devices" add constraint "devices_uuid_unique" unique ("uuid");`);
    this.addSql(`create index "devices_hostname_index" on "devices" ("hostname");`);
    this.addSql(`alter table "devices" add constraint "devices_type_check" check ("type" in ('GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD'));`);
    this.addSql(`alter table "devices" add constraint "devices_status_check" check ("status" in ('enabled', 'maintaining'));`);

    this.addSql(
      `create table "deployables" ("id" serial primary key, "uuid" varchar(36) not null, "parent_id" int null, "root_id" int null, "name" varchar(255) not null, "num_accelerators" int not null, "device_id" int not null, "rp_uuid" varchar(36) null, "driver_name" varchar(255) null, "bitstream_id" varchar(36) null, "position" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null);`,
    );
    this.addSql(`alter table "deployables" add constraint "deployables_uuid_unique" unique ("uuid");`);

    this.addSql(
      `create table "attributes" ("id" serial primary key, "uuid" varchar(36) not null, "deployable_id" int not null, "key" text not null, "value" text not null, "position" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null);`,
    );
    this.addSql(`alter table "attributes" add constraint "attributes_uuid_unique" unique ("uuid");`);

    this.addSql(
      `create table "controlpath_ids" ("id" serial primary key, "uuid" varchar(36) not null, "device_id" int not null, "cpid_type" text not null, "cpid_info" varchar(255) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null);`,
    );
    this.addSql(`alter table "controlpath_ids" add constraint "controlpath_ids_uuid_unique" unique ("uuid");`);
    this.addSql(`alter table "controlpath_ids" add constraint "controlpath_ids_cpid_type_check" check ("cpid_type" in ('PCI'));`);

    this.addSql(
      `create table "attach_handles" ("id" serial primary key, "uuid" varchar(36) not null, "deployable_id" int not null, "cpid_id" int not null, "in_use" boolean not null default false, "attach_type" text not null, "attach_info" varchar(255) not null, "position" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null);`,
    );
    this.addSql(`alter table "attach_handles" add constraint "attach_handles_uuid_unique" unique ("uuid");`);
    this.addSql(`alter table "attach_handles" add constraint "attach_handles_attach_type_check" check ("attach_type" in ('PCI', 'MDEV', 'TEST_PCI'));`);

    this.addSql(
      `create table "device_profiles" ("id" serial primary key, "uuid" varchar(36) not null, "name" varchar(255) not null, "profile_json" text not null, "description" text null, "created_at" timestamptz not null, "updated_at" timestamptz not null);`,
    );
    this.addSql(`alter table "device_profiles" add constraint "device_profiles_uuid_unique" unique ("uuid");`);
    this.addSql(`alter table "device_profiles" add constraint "device_profiles_name_unique" unique ("name");`);
    this.addSql(`alter table "device_profiles" add constraint "device_profiles_uuid_name_unique" unique ("uuid", "name");`);

    this.addSql(
      `create table "documents" ("collection" varchar(255) not null, "id" varchar(255) not null, "body" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("collection", "id"));`,
    );

    this.addSql(
      `create table "extended_accelerator_requests" ("id" serial primary key, "uuid" varchar(36) not null, "project_id" varchar(255) null, "state" varchar(255) not null, "machine_state" varchar(255) not null, "context" jsonb not null, "device_profile_id" int null, "device_profile_name" varchar(255) not null, "device_profile_group_id" int not null, "hostname" varchar(255) null, "device_rp_uuid" varchar(255) null, "instance_uuid" varchar(255) null, "attach_handle_id" int null, "substate" varchar(255) not null default 'Initial', "deployable_id" int null, "created_at" timestamptz not null, "updated_at" timestamptz not null);`,
    );
    this.addSql(`alter table "extended_accelerator_requests" add constraint "extended_accelerator_requests_uuid_unique" unique ("uuid");`);
    this.addSql(`create index "extended_accelerator_requests_project_id_index" on "extended_accelerator_requests" ("project_id");`);
    this.addSql(`create index "extended_accelerator_requests_device_profile_id_index" on "extended_accelerator_requests" ("device_profile_id");`);
    this.addSql(`create index "extended_accelerator_requests_device_rp_uuid_index" on "extended_accelerator_requests" ("device_rp_uuid");`);
    this.addSql(`create index "extended_accelerator_requests_instance_uuid_index" on "extended_accelerator_requests" ("instance_uuid");`);
    this.addSql(`create index "extended_accelerator_requests_attach_handle_id_index" on "extended_accelerator_requests" ("attach_handle_id");`);
    this.addSql(`create index "extended_accelerator_requests_deployable_id_index" on "extended_accelerator_requests" ("deployable_id");`);

    this.addSql(
      `create table "hosts" ("name" varchar(255) not null, "state" varchar(255) not null, "context" jsonb not null, "agent_id" varchar(255) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("name"));`,
    );

    this.addSql(
      `create table "drivers" ("id" serial primary key, "host" varchar(255) not null, "name" varchar(255) not null, "version" varchar(255) not null, "state" varchar(255) not null default 'installed', "created_at" timestamptz not null, "updated_at" timestamptz not null);`,
    );
    this.addSql(`alter table "drivers" add constraint "drivers_host_name_unique" unique ("host", "name");`);

    this.addSql(
      `create table "transition_log" ("seq" bigserial primary key, "kind" varchar(255) not null, "id" varchar(255) not null, "host" varchar(255) null, "event" varchar(255) not null, "from" varchar(255) not null, "to" varchar(255) not null, "actor" varchar(255) null, "request_id" varchar(255) null, "reason" text null, "at" timestamptz not null);`,
    );
    this.addSql(`create index "transition_log_id_seq_index" on "transition_log" ("id", "seq");`);

    this.addSql(
      `alter table "deployables" add constraint "deployables_parent_id_foreign" foreign key ("parent_id") references "deployables" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "deployables" add constraint "deployables_root_id_foreign" foreign key ("root_id") references "deployables" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "deployables" add constraint "deployables_device_id_foreign" foreign key ("device_id") references "devices" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "attributes" add constraint "attributes_deployable_id_foreign" foreign key ("deployable_id") references "deployables" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "controlpath_ids" add constraint "controlpath_ids_device_id_foreign" foreign key ("device_id") references "devices" ("id") on delete restrict;`,
    );

    this.addSql(
      `alter table "attach_handles" add constraint "attach_handles_deployable_id_foreign" foreign key ("deployable_id") references "deployables" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "attach_handles" add constraint "attach_handles_cpid_id_foreign" foreign key ("cpid_id") references "controlpath_ids" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "extended_accelerator_requests" add constraint "extended_accelerator_requests_device_profile_id_foreign" foreign key ("device_profile_id") references "device_profiles" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "extended_accelerator_requests" add constraint "extended_accelerator_requests_attach_handle_id_foreign" foreign key ("attach_handle_id") references "attach_handles" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "extended_accelerator_requests" add constraint "extended_accelerator_requests_deployable_id_foreign" foreign key ("deployable_id") references "deployables" ("id") on delete set null;`,
    );

    this.addSql(`alter table "drivers" add constraint "drivers_host_foreign" foreign key ("host") references "hosts" ("name") on delete cascade;`);
  }
}
