// The page-side half of the page tools (plugins/browser/page): installed
// once per document as window.__aiod by every call that needs it. The
// clickable-element listing follows @agent-infra/mcp-server-browser's
// (browser-use's buildDomTree: interactive, visible, topmost elements,
// numbered in document order, with the page's loose text between them);
// the elements themselves are kept in the page (window.__aiod.els), so an
// index names an element of the document it was listed in, and a new
// document has none until listed again. A document holding an older
// version of the script (installed before the plugin was replaced) gets
// this one, keeping its listing.
if (!window.__aiod || window.__aiod.version !== 2) {
  (() => {
    const INTERACTIVE_TAGS = new Set(['a', 'button', 'details', 'embed', 'input', 'label', 'menu', 'menuitem', 'object', 'select', 'textarea', 'summary']);
    const INTERACTIVE_ROLES = new Set(['button', 'menu', 'menuitem', 'link', 'checkbox', 'radio', 'slider', 'tab', 'tabpanel', 'textbox', 'combobox', 'grid', 'listbox', 'option', 'progressbar', 'scrollbar', 'searchbox', 'switch', 'tree', 'treeitem', 'spinbutton', 'tooltip', 'a-button-inner', 'a-dropdown-button', 'click', 'menuitemcheckbox', 'menuitemradio', 'a-button-text', 'button-text', 'button-icon', 'button-icon-only', 'button-text-icon-only', 'dropdown']);
    const SKIP = new Set(['svg', 'script', 'style', 'link', 'meta', 'noscript', 'template']);

    function interactive(el) {
      const tag = el.tagName.toLowerCase();
      if (tag === 'body') return false;
      const role = el.getAttribute('role'), ariaRole = el.getAttribute('aria-role'), tabIndex = el.getAttribute('tabindex');
      const parentTag = el.parentElement && el.parentElement.tagName.toLowerCase();
      if (INTERACTIVE_TAGS.has(tag) || INTERACTIVE_ROLES.has(role) || INTERACTIVE_ROLES.has(ariaRole) ||
        el.classList.contains('address-input__container__input') ||
        (tabIndex !== null && tabIndex !== '-1' && parentTag && parentTag !== 'body') ||
        el.getAttribute('data-action') === 'a-dropdown-select' || el.getAttribute('data-action') === 'a-dropdown-button') return true;
      if (parentTag === 'body') return false;
      return el.onclick != null || el.getAttribute('onclick') !== null || el.hasAttribute('ng-click') ||
        el.hasAttribute('@click') || el.hasAttribute('v-on:click') || el.onmousedown != null || el.onmouseup != null ||
        el.ontouchstart != null || el.ontouchend != null ||
        el.hasAttribute('aria-expanded') || el.hasAttribute('aria-pressed') || el.hasAttribute('aria-selected') ||
        el.hasAttribute('aria-checked') || el.draggable || el.getAttribute('draggable') === 'true';
    }

    function visible(el) {
      const st = getComputedStyle(el);
      return el.offsetWidth > 0 && el.offsetHeight > 0 && st.visibility !== 'hidden' && st.display !== 'none';
    }

    function topmost(el) {
      const rects = el.getClientRects();
      let inView = false;
      for (const r of rects) {
        if (r.width > 0 && r.height > 0 && !(r.bottom < 0 || r.top > innerHeight || r.right < 0 || r.left > innerWidth)) { inView = true; break; }
      }
      if (!inView) return false;
      if (el.ownerDocument !== document) return true;
      const root = el.getRootNode();
      const r = el.getBoundingClientRect();
      const x = r.left + r.width / 2, y = r.top + r.height / 2;
      if (x < 0 || x >= innerWidth || y < 0 || y >= innerHeight) return true;
      try {
        const top = (root instanceof ShadowRoot ? root : document).elementFromPoint(x, y);
        for (let c = top; c && c !== document.documentElement && c !== root; c = c.parentElement) if (c === el) return true;
        return false;
      } catch (e) { return true; }
    }

    function textVisible(node) {
      const range = document.createRange();
      range.selectNodeContents(node);
      const r = range.getBoundingClientRect();
      return r.width !== 0 && r.height !== 0 && r.top >= 0 && r.top <= innerHeight && node.parentElement &&
        node.parentElement.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true });
    }

    function context(el) {
      const tag = el.tagName.toLowerCase(), a = (n) => el.getAttribute(n), has = (n) => el.hasAttribute(n);
      const c = [];
      const type = a('type'), href = a('href'), ariaLabel = a('aria-label'), placeholder = a('placeholder'), value = a('value'), role = a('role');
      if (tag === 'a') {
        if (href) {
          if (href.startsWith('mailto:')) c.push('email');
          else if (href.startsWith('tel:')) c.push('phone');
          else if (href.startsWith('#')) c.push('anchor');
          else if (href.startsWith('javascript:')) c.push('javascript');
          else if (has('download')) c.push('download');
          else c.push('link');
          c.push(`href="${href}"`);
        } else c.push('link');
        const target = a('target');
        if (target === '_blank') c.push('new-window'); else if (target) c.push(`target="${target}"`);
      } else if (tag === 'button') {
        c.push(type === 'submit' ? 'submit' : type === 'reset' ? 'reset' : 'button');
        if (has('disabled')) c.push('disabled');
      } else if (tag === 'input') {
        const t = type || 'text';
        c.push(t);
        if (t === 'checkbox' || t === 'radio') {
          if (has('checked')) c.push('checked');
          if (a('name')) c.push(`name="${a('name')}"`);
        } else if (t === 'file') {
          if (has('multiple')) c.push('multiple');
          if (a('accept')) c.push(`accept="${a('accept')}"`);
        } else if (t === 'number' || t === 'range') {
          if (a('min')) c.push(`min="${a('min')}"`);
          if (a('max')) c.push(`max="${a('max')}"`);
        }
        if (has('required')) c.push('required');
        if (has('readonly')) c.push('readonly');
        if (placeholder) c.push(`placeholder="${placeholder}"`);
        if (a('pattern')) c.push('has-pattern');
        const ac = a('autocomplete');
        if (ac && ac !== 'off') c.push(`autocomplete="${ac}"`);
      } else if (tag === 'select') {
        c.push('select');
        if (has('required')) c.push('required');
        if (has('multiple')) c.push('multiple');
        if (has('disabled')) c.push('disabled');
      } else if (tag === 'textarea') {
        c.push('textarea');
        if (placeholder) c.push(`placeholder="${placeholder}"`);
        if (has('required')) c.push('required');
        if (has('readonly')) c.push('readonly');
        if (has('disabled')) c.push('disabled');
      } else if (tag === 'img') {
        c.push('image');
        if (a('alt')) c.push(`alt="${a('alt')}"`);
      } else if (tag === 'video' || tag === 'audio') {
        c.push(tag);
        if (has('controls')) c.push('has-controls');
      } else if (tag === 'iframe') {
        c.push('iframe');
        if (a('src')) c.push(`src="${a('src')}"`);
      } else if (tag === 'form') {
        c.push('form');
        if (a('method')) c.push(`method="${a('method')}"`);
      } else if (tag === 'label') {
        c.push('label');
        if (a('for')) c.push(`for="${a('for')}"`);
      } else if (role) {
        c.push(`role=${role}`);
        if ((role === 'button' || role === 'link') && has('disabled')) c.push('disabled');
        else if (role === 'checkbox' || role === 'radio') {
          if (a('aria-checked') === 'true') c.push('checked'); else if (a('aria-checked') === 'false') c.push('unchecked');
        } else if (role === 'option' && a('aria-selected') === 'true') c.push('selected');
        else if (role === 'tab' && a('aria-selected') === 'true') c.push('active-tab');
      }
      if (a('id')) c.push(`id="${a('id')}"`);
      if (a('title')) c.push(`title="${a('title')}"`);
      if (ariaLabel && !c.includes(`placeholder="${ariaLabel}"`)) c.push(`aria-label="${ariaLabel}"`);
      if (value && tag !== 'input' && tag !== 'button' && value.length < 50) c.push(`value="${value}"`);
      return c;
    }

    // The tree of the document's elements, as buildDomTree builds it:
    // nodes {el, tag, index?, text?, children}.
    function tree(node, out) {
      if (node.nodeType === Node.TEXT_NODE) {
        const t = node.textContent.trim();
        if (t && textVisible(node)) return { text: t };
        return null;
      }
      if (node.nodeType !== Node.ELEMENT_NODE) return null;
      const tag = node.tagName.toLowerCase();
      if (SKIP.has(tag)) return null;
      const n = { el: node, tag, children: [] };
      if (interactive(node) && visible(node) && topmost(node)) {
        n.index = out.length;
        out.push(node);
      }
      const kids = [];
      if (node.shadowRoot) kids.push(...node.shadowRoot.childNodes);
      if (tag === 'iframe') {
        try {
          const d = node.contentDocument || node.contentWindow.document;
          if (d && d.body) kids.push(...d.body.childNodes);
        } catch (e) { /* another origin */ }
      } else kids.push(...node.childNodes);
      for (const k of kids) {
        const c = tree(k, out);
        if (c) n.children.push(c);
      }
      return n;
    }

    function textTillNextClickable(n) {
      const parts = [];
      const walk = (x) => {
        if (x !== n && x.index !== undefined) return;
        if (x.text !== undefined) parts.push(x.text);
        else for (const c of x.children) walk(c);
      };
      walk(n);
      return parts.join('\n').trim();
    }

    function enhancedText(n) {
      const a = (k) => n.el.getAttribute(k);
      if (a('aria-label')) return a('aria-label');
      if (a('title')) return a('title');
      if (a('alt')) return a('alt');
      const t = textTillNextClickable(n);
      if (t) return t;
      if (a('placeholder')) return `[placeholder: ${a('placeholder')}]`;
      if (a('value') && n.tag !== 'input') return `[value: ${a('value')}]`;
      if (a('href')) return '[link]';
      return `[${n.tag || 'element'}]`;
    }

    function listing(root) {
      const lines = [];
      const walk = (x, inClickable) => {
        if (x.text !== undefined) {
          if (!inClickable) lines.push(`[]${x.text}`);
          return;
        }
        if (x.index !== undefined) {
          const c = context(x.el);
          lines.push(`[${x.index}]` + (c.length ? ` [${c.join(' ')}]` : '') + ` <${x.tag}>${enhancedText(x)}</${x.tag}>`);
        }
        for (const k of x.children) walk(k, inClickable || x.index !== undefined);
      };
      walk(root, false);
      return lines.join('\n');
    }

    // cut bounds a string to max characters, telling how long it was.
    const cut = (s, max) => ({ text: s.length > max ? s.slice(0, max) : s, total: s.length });

    // Markdown of the page: the title, then the main content (an <article>
    // or <main> when the page has one, else the body) without navigation,
    // scripts or hidden elements.
    function markdown(max) {
      const root = document.querySelector('article') || document.querySelector('main') || document.body;
      const out = [];
      const inline = (node) => {
        let s = '';
        for (const c of node.childNodes) s += md(c, true);
        return s.replace(/[ \t\n]+/g, ' ');
      };
      const block = (s) => { s = s.trim(); if (s) out.push(s); return ''; };
      const md = (node, inInline) => {
        if (node.nodeType === Node.TEXT_NODE) return node.textContent;
        if (node.nodeType !== Node.ELEMENT_NODE) return '';
        const tag = node.tagName.toLowerCase();
        if (SKIP.has(tag) || ['nav', 'footer', 'aside', 'head', 'iframe', 'form', 'button', 'select'].includes(tag) && node !== root) return '';
        if (node.checkVisibility && !node.checkVisibility({ checkVisibilityCSS: true })) return '';
        switch (tag) {
          case 'br': return '\n';
          case 'a': {
            const t = inline(node).trim(), h = node.getAttribute('href');
            return h && t ? `[${t}](${h})` : t;
          }
          case 'img': { const alt = node.getAttribute('alt') || ''; const src = node.getAttribute('src'); return src ? `![${alt}](${src})` : ''; }
          case 'strong': case 'b': { const t = inline(node).trim(); return t ? `**${t}**` : ''; }
          case 'em': case 'i': { const t = inline(node).trim(); return t ? `_${t}_` : ''; }
          case 'code': if (inInline) return '`' + node.textContent + '`'; break;
        }
        if (inInline && !['p', 'div', 'section', 'ul', 'ol', 'li', 'table', 'pre', 'blockquote', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'header', 'article', 'main', 'dl'].includes(tag)) return inline(node);
        switch (tag) {
          case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6':
            // an h1 is a second-level heading, as Readability demotes it
            return block('#'.repeat(Math.max(2, +tag[1])) + ' ' + inline(node).trim());
          case 'p': return block(inline(node));
          case 'hr': return block('---');
          case 'pre': return block('```\n' + node.textContent.replace(/\n$/, '') + '\n```');
          case 'blockquote': return block(inline(node).trim().split('\n').map((l) => '> ' + l).join('\n'));
          case 'ul': case 'ol': {
            let i = 0;
            const items = [];
            for (const li of node.children) {
              if (li.tagName.toLowerCase() !== 'li') continue;
              i++;
              items.push((tag === 'ol' ? `${i}. ` : '- ') + inline(li).trim());
            }
            return block(items.join('\n'));
          }
          case 'table': {
            const rows = [...node.querySelectorAll('tr')].map((tr) => '| ' + [...tr.children].map((td) => inline(td).trim().replace(/\|/g, '\\|')).join(' | ') + ' |');
            if (rows.length) {
              const n = node.querySelector('tr').children.length;
              rows.splice(1, 0, '|' + ' --- |'.repeat(n));
            }
            return block(rows.join('\n'));
          }
        }
        // a container: its inline runs are paragraphs, its blocks blocks
        let run = '';
        for (const c of node.childNodes) {
          const isBlock = c.nodeType === Node.ELEMENT_NODE && ['p', 'div', 'section', 'ul', 'ol', 'table', 'pre', 'blockquote', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'header', 'article', 'main', 'dl', 'nav', 'footer', 'aside', 'form'].includes(c.tagName.toLowerCase());
          if (isBlock) { block(run.replace(/[ \t\n]+/g, ' ')); run = ''; md(c, false); } else run += md(c, true);
        }
        block(run.replace(/[ \t\n]+/g, ' '));
        return '';
      };
      md(root, false);
      return cut(document.title + '\n' + out.join('\n\n'), max);
    }

    // The kinds of input that take text: typed ones get key events, as
    // Puppeteer's type, with the caret placed by the selection API they
    // have; set ones (no selection API, or a value typing cannot make:
    // a date's segments follow the browser's locale) get the value by
    // its setter and the input and change events a user's edit fires.
    const TYPED = new Set(['text', 'search', 'url', 'tel', 'password']);
    const SET = {
      email: '', number: 'a number', date: 'YYYY-MM-DD', time: 'HH:MM or HH:MM:SS',
      'datetime-local': 'YYYY-MM-DDTHH:MM', month: 'YYYY-MM', week: 'YYYY-Www',
    };
    const APPENDS = new Set(['email', 'number']); // without clear, the value goes after the old one
    const CLICKED = { checkbox: 'check it', radio: 'check it', submit: 'press it', button: 'press it', reset: 'press it', image: 'press it' };

    // fill readies el for browser_form_input_fill: focused, and either
    // its caret placed for typing ({typed: true}) or its value set. An
    // element that takes no text, or a value the field refuses, throws
    // an Error saying so.
    function fill(el, value, clear) {
      if (!el) return { found: false };
      const tag = el.tagName.toLowerCase();
      const isInput = tag === 'input';
      const what = isInput ? `<input type="${el.type}">` : `<${tag}>`;
      const typed = (isInput && TYPED.has(el.type)) || tag === 'textarea';
      const set = isInput && Object.hasOwn(SET, el.type);
      if (!typed && !set && !el.isContentEditable) {
        if (isInput && CLICKED[el.type]) throw new Error(`${what} takes no text: use browser_click to ${CLICKED[el.type]}`);
        if (isInput) throw new Error(`${what} takes no text`);
        if (tag === 'select') throw new Error(`${what} takes no text: use browser_select to choose an option`);
        throw new Error(`${what} takes no text: fill an input, a textarea or a contenteditable element`);
      }
      if (el.matches(':disabled')) throw new Error(`${what} is disabled`);
      if ((typed || set) && el.readOnly) throw new Error(`${what} is read-only`);
      el.scrollIntoView({ block: 'center', inline: 'center' });
      el.focus();
      if (typed) {
        if (clear) el.select(); else el.setSelectionRange(el.value.length, el.value.length);
        return { found: true, typed: true };
      }
      if (!set) { // contenteditable
        const r = el.ownerDocument.createRange();
        r.selectNodeContents(el);
        if (!clear) r.collapse(false);
        const sel = el.ownerDocument.getSelection();
        sel.removeAllRanges();
        sel.addRange(r);
        return { found: true, typed: true };
      }
      const old = el.value;
      const want = !clear && APPENDS.has(el.type) ? old + value : value;
      // the setter of the element's class, not one a page's framework
      // defined on the element itself, so the framework sees the change
      let proto = Object.getPrototypeOf(el), desc;
      while (proto && !(desc = Object.getOwnPropertyDescriptor(proto, 'value'))) proto = Object.getPrototypeOf(proto);
      desc.set.call(el, want);
      if (el.value === '' && want !== '') {
        desc.set.call(el, old);
        throw new Error(`${JSON.stringify(want)} is not a value of ${what}` + (SET[el.type] ? ` (${SET[el.type]})` : ''));
      }
      const view = el.ownerDocument.defaultView || window;
      el.dispatchEvent(new view.InputEvent('input', { bubbles: true, composed: true, inputType: 'insertText', data: value }));
      el.dispatchEvent(new view.Event('change', { bubbles: true }));
      return { found: true, typed: false };
    }

    const prev = window.__aiod;
    window.__aiod = {
      version: 2,
      els: prev && Array.isArray(prev.els) ? prev.els : [],
      // list numbers the clickable elements and answers their listing.
      list(max) {
        const els = [];
        const root = tree(document.body, els);
        this.els = els;
        return cut(root ? listing(root) : '', max);
      },
      el(i) {
        const e = this.els[i];
        return e && e.isConnected ? e : null;
      },
      markdown,
      cut,
      fill,
    };
  })();
}
