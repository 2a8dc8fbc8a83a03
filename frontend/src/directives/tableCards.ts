import type { Directive } from 'vue'

/** A column's name as a reader sees it: a header holding only a screen reader's text has none. */
function visibleName(cell: Element | undefined): string {
  if (!cell) return ''
  const hidden = [...cell.querySelectorAll('.sr-only')].map((e) => e.textContent ?? '').join('')
  const text = (cell.textContent ?? '').replace(/\s+/g, ' ').trim()
  return hidden && text === hidden.replace(/\s+/g, ' ').trim() ? '' : text
}

const span = (cell: Element) => Number(cell.getAttribute('colspan') ?? 1) || 1

/** Names each body and footer cell by its column (`data-label`), for the card layout's labels. */
function labelCells(table: HTMLTableElement): void {
  const headRow = table.querySelector(':scope > thead > tr')
  const heads = [...(headRow?.children ?? [])].flatMap((cell) => Array.from({ length: span(cell) }, () => visibleName(cell)))
  for (const row of table.querySelectorAll(':scope > tbody > tr, :scope > tfoot > tr')) {
    let column = 0
    for (const cell of row.children) {
      const name = span(cell) > 1 ? '' : (heads[column] ?? '')
      if (cell.getAttribute('data-label') !== name) cell.setAttribute('data-label', name)
      column += span(cell)
    }
  }
}

/**
 * `<table class="table" v-cards>`: on a phone the table is laid out as a list of cards (main.css,
 * `table.cards`), each cell under its column's name, so no column or button lies past the screen
 * and no column name is squeezed to a character a line. The names follow the headers as they
 * change (the language, the columns shown), set again after every render of the owner.
 */
export const vCards: Directive<HTMLTableElement> = {
  mounted(table) {
    table.classList.add('cards')
    labelCells(table)
  },
  updated: labelCells,
}
