'use strict';
// Structured outputs and tool calling: a JSON Schema's output parses and
// validates (checked by hand below: no dependency), a GBNF grammar limits
// the text, logitBias bans a token, and on Qwen2.5-Coder 0.5B Instruct
// (Hermes-style <tool_call>, chosen by the library from its chat template)
// toolChoice 'required' gives calls whose arguments validate, whose
// streamed deltas put together equal the whole answer, and a tool result in
// the history is accepted; the library's errors come back as HearthError
// ERR_INVALID_ARG with its message.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { hearth, MODEL, top } = require('./common');
const { Model, jsonSchemaToGrammar } = hearth;

const QWEN = process.env.HEARTH_QWEN_MODEL || path.join(top, 'models', 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');
const noQwen = !fs.existsSync(QWEN) && `${QWEN} is absent (set HEARTH_QWEN_MODEL to Qwen2.5-Coder 0.5B Instruct's GGUF)`;

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 20 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    city: { type: 'string', enum: ['Paris', 'Rome', 'Tokyo'] },
  },
  required: ['name', 'age', 'city'],
  additionalProperties: false,
};

/* PERSON's rules, checked by hand. */
function checkPerson(text) {
  const p = JSON.parse(text);
  assert.deepStrictEqual(Object.keys(p).sort(), ['age', 'city', 'name'], text);
  assert.ok(typeof p.name === 'string' && p.name.length <= 20, text);
  assert.ok(Number.isInteger(p.age) && p.age >= 0 && p.age <= 150, text);
  assert.ok(['Paris', 'Rome', 'Tokyo'].includes(p.city), text);
}

const ADD = {
  type: 'function',
  function: {
    name: 'add',
    description: 'Add two integers.',
    parameters: {
      type: 'object',
      properties: { a: { type: 'integer' }, b: { type: 'integer' } },
      required: ['a', 'b'],
      additionalProperties: false,
    },
  },
};
const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 40 }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const TOOLS = [WEATHER, ADD];

/* A call is well formed and its arguments follow its tool's schema (checked by hand). */
function checkCall(call) {
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  assert.strictEqual(call.type, 'function');
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === 'add') {
    assert.deepStrictEqual(Object.keys(args).sort(), ['a', 'b']);
    assert.ok(Number.isInteger(args.a) && Number.isInteger(args.b), call.function.arguments);
  } else {
    assert.strictEqual(call.function.name, 'get_weather');
    assert.deepStrictEqual(Object.keys(args).sort(), ['city', 'unit']);
    assert.ok(typeof args.city === 'string' && ['celsius', 'fahrenheit'].includes(args.unit), call.function.arguments);
  }
}

const ask = (content) => [{ role: 'user', content }];
const greedy = { temperature: 0 };

test('jsonSchemaToGrammar gives GBNF; an unsupported keyword throws naming it', () => {
  const grammar = jsonSchemaToGrammar(PERSON);
  assert.match(grammar, /^root ::= /m);
  assert.strictEqual(jsonSchemaToGrammar(JSON.stringify(PERSON)), grammar);
  assert.throws(() => jsonSchemaToGrammar({ type: 'object', properties: { age: { type: 'integer', multipleOf: 2 } } }), {
    code: 'ERR_INVALID_ARG',
    message: /\/properties\/age.*multipleOf/,
  });
  assert.throws(() => jsonSchemaToGrammar(42), { code: 'ERR_INVALID_ARG', message: /schema/ });
});

test('on the default model', async (t) => {
  const model = new Model(MODEL, { nCtx: 1024 });
  t.after(() => model.dispose());

  await t.test('jsonSchema and responseFormat give JSON the schema accepts', async () => {
    checkPerson(await model.generate('A person as JSON:', { maxTokens: 96, jsonSchema: PERSON, ...greedy }));
    const responseFormat = { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } };
    for (const seed of [1, 2, 3]) {
      const r = await model.chat(ask('Describe a person who lives in Rome.'), { maxTokens: 96, responseFormat, seed });
      checkPerson(r.choices[0].message.content);
      assert.strictEqual(r.choices[0].finish_reason, 'stop');
    }
    const obj = await model.chat(ask('Describe Paris as JSON.'), { maxTokens: 128, responseFormat: { type: 'json_object' }, ...greedy });
    assert.strictEqual(typeof JSON.parse(obj.choices[0].message.content), 'object');
  });

  await t.test('a grammar limits the text', async () => {
    const grammar = 'root ::= "yes" | "no"';
    for (const seed of [1, 2, 3, 4]) assert.ok(['yes', 'no'].includes(await model.generate('Is water wet? Answer:', { grammar, seed, maxTokens: 8 })));
    let text = '';
    for await (const c of model.chat(ask('Is the sky blue?'), { grammar, stream: true, maxTokens: 8, ...greedy })) {
      text += c.choices[0].delta.content || '';
    }
    assert.ok(['yes', 'no'].includes(text), text);
    await assert.rejects(model.generate('x', { grammar: 'root ::= ("yes"' }), { code: 'ERR_INVALID_ARG', message: /grammar line 1/ });
  });

  await t.test('logitBias -100 bans a token', async () => {
    const prompt = 'The capital of France is';
    const plain = await model.generate(prompt, { maxTokens: 4, ...greedy });
    const paris = model.tokenize(plain, { addSpecial: false })[0];
    assert.strictEqual(model.detokenize([paris]).trim(), 'Paris');
    const banned = await model.generate(prompt, { maxTokens: 16, logitBias: { [paris]: -100 }, ...greedy });
    assert.ok(banned.length > 0 && !model.tokenize(banned, { addSpecial: false }).includes(paris), banned);
  });

  await t.test('bad options reject with ERR_INVALID_ARG naming them', async () => {
    const cases = [
      [{ grammar: 'root ::= "a"', jsonSchema: PERSON }, /one of/],
      [{ responseFormat: { type: 'json_object' }, jsonSchema: PERSON }, /one of/],
      [{ responseFormat: { type: 'xml' } }, /responseFormat/],
      [{ responseFormat: { type: 'json_schema', json_schema: { name: 'x' } } }, /schema/],
      [{ jsonSchema: [1] }, /jsonSchema/],
      [{ grammar: 7 }, /grammar/],
      [{ logitBias: [[1, 2]] }, /logitBias/],
      [{ logitBias: { a: 1 } }, /logitBias/],
      [{ logitBias: { 5: 'x' } }, /logitBias/],
      [{ logitBias: { [model.nVocab + 3]: -100 } }, /vocabulary/],
      [{ tools: { type: 'function' } }, /tools/],
      [{ toolChoice: 'auto' }, /tools/],
      [{ tools: TOOLS, toolChoice: { type: 'function' } }, /toolChoice/],
      [{ tools: TOOLS, grammar: 'root ::= "a"' }, /grammar/],
      [{ responseFormat: { type: 'json_schema', json_schema: { schema: { type: 'number', exclusiveMaximum: 3 } } } }, /exclusiveMaximum/],
    ];
    for (const [opts, message] of cases) {
      await assert.rejects(model.chat(ask('Hi'), { maxTokens: 4, ...opts }), { code: 'ERR_INVALID_ARG', message }, JSON.stringify(opts));
    }
    await assert.rejects(model.chat([{ role: 'user', content: 7 }]), { code: 'ERR_INVALID_ARG', message: /messages\[0\]\.content/ });
  });
});

test('tools on Qwen2.5-Coder 0.5B', { skip: noQwen }, async (t) => {
  const qwen = new Model(QWEN, { nCtx: 2048, nSeqMax: 2 });
  t.after(() => qwen.dispose());

  await t.test("toolChoice 'required' and a named function give calls that validate", async () => {
    for (const prompt of ['What is the weather in Paris in celsius?', 'What is 17 plus 25?']) {
      const r = await qwen.chat(ask(prompt), { tools: TOOLS, toolChoice: 'required', maxTokens: 96, ...greedy });
      const { message, finish_reason: finish } = r.choices[0];
      assert.strictEqual(finish, 'tool_calls');
      assert.strictEqual(message.content, null);
      assert.ok(message.tool_calls.length >= 1);
      message.tool_calls.forEach(checkCall);
    }
    const toolChoice = { type: 'function', function: { name: 'add' } };
    const r = await qwen.chat(ask('Is it raining in London?'), { tools: TOOLS, toolChoice, maxTokens: 96, ...greedy });
    assert.ok(r.choices[0].message.tool_calls.every((c) => c.function.name === 'add'));
    r.choices[0].message.tool_calls.forEach(checkCall);
    await assert.rejects(qwen.chat(ask('Hi'), { tools: TOOLS, toolChoice: 'nosuch' }), { code: 'ERR_INVALID_ARG', message: /nosuch/ });
  });

  await t.test('streamed tool-call deltas put together equal the whole answer', async () => {
    for (const prompt of ['What is the weather in Paris in celsius?', 'Add 3 and 4 for me.']) {
      const opts = { tools: TOOLS, toolChoice: 'required', maxTokens: 96, ...greedy };
      const whole = (await qwen.chat(ask(prompt), opts)).choices[0];
      const calls = [];
      let content = '';
      let finish = null;
      for await (const c of qwen.chat(ask(prompt), { ...opts, stream: true })) {
        const { delta, finish_reason: f } = c.choices[0];
        content += delta.content || '';
        finish = f || finish;
        for (const d of delta.tool_calls || []) {
          if (d.index === calls.length) {
            assert.ok(d.id && d.type === 'function' && d.function.name, JSON.stringify(d));
            calls.push({ id: d.id, type: 'function', function: { name: d.function.name, arguments: '' } });
          } else {
            assert.ok(!('id' in d) && !('name' in d.function), JSON.stringify(d));
          }
          calls[d.index].function.arguments += d.function.arguments;
        }
      }
      assert.strictEqual(content, '');
      assert.strictEqual(finish, 'tool_calls');
      const noIds = (list) => list.map((c) => ({ ...c, id: null }));
      assert.deepStrictEqual(noIds(calls), noIds(whole.message.tool_calls));
    }
  });

  await t.test('a tool result in the history is accepted', async () => {
    const messages = [
      { role: 'user', content: 'What is the weather in Paris in celsius?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_abc', name: 'get_weather', content: '22 degrees, sunny' },
    ];
    const r = await qwen.chat(messages, { tools: TOOLS, toolChoice: 'none', maxTokens: 48, ...greedy });
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.match(r.choices[0].message.content, /22/);
  });
});
