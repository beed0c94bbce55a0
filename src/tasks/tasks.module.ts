import { Module } from '@nestjs/common';
import { TaskDatabase } from './task-database.js';
import { TaskKinds } from './task-kinds.js';
import { TaskController } from './task.controller.js';
import { TaskRepository } from './task.repository.js';
import { TaskRunner } from './task.runner.js';

/** Tasks: work on many callbacks at once, in chunks, resumable (task.sql.ts); the kinds are the features' (TaskKinds). */
@Module({
  controllers: [TaskController],
  providers: [TaskDatabase, TaskKinds, TaskRepository, TaskRunner],
  exports: [TaskKinds, TaskRepository, TaskRunner],
})
export class TasksModule {}
